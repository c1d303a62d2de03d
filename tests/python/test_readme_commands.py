"""Every `thermrig` command the README and the first-rig guide show is one the CLI takes: the command
path exists and its arguments and options parse (typer's own parser, no command run). A renamed command or
option makes this fail before a newcomer meets it. test_newcomer_path runs the path itself."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from thermrig.cli.main import app

REPO = Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/build-a-rig.md", "docs/results.md", "docs/install.md"]
# What a page writes for the reader to fill in: a value the parser accepts in its place.
PLACEHOLDERS = {'"$THERMRIG_PORT"': "/dev/ttyACM0", "$THERMRIG_PORT": "/dev/ttyACM0"}


def shown_commands(page: str) -> list[str]:
    """The `thermrig ...` lines of the page's sh blocks, comments and a trailing `&` dropped."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", (REPO / page).read_text(), flags=re.S):
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip().rstrip("&").strip()
            if line.startswith("thermrig "):
                out.append(line)
    return out


def _rest(ctx: object) -> list[str]:
    """What a group's context left for its subcommand (typer's own click keeps it in _protected_args)."""
    return [*getattr(ctx, "_protected_args", []), *getattr(ctx, "args", [])]


def parses(line: str) -> None:
    for placeholder, value in PLACEHOLDERS.items():
        line = line.replace(placeholder, value)
    args = shlex.split(line)[1:]
    cmd = typer.main.get_command(app)
    ctx = cmd.make_context("thermrig", list(args), resilient_parsing=False)
    while hasattr(cmd, "commands") and _rest(ctx):
        name, *rest = _rest(ctx)
        assert name in cmd.commands, f"{line!r}: no command {name!r} (the CLI has {', '.join(cmd.commands)})"
        cmd = cmd.commands[name]
        ctx = cmd.make_context(name, rest, parent=ctx, resilient_parsing=False)


CASES = [(page, line) for page in PAGES for line in shown_commands(page)]


def test_the_pages_show_commands() -> None:
    assert len(shown_commands("README.md")) >= 5
    assert len(shown_commands("docs/build-a-rig.md")) >= 10


@pytest.mark.parametrize(("page", "line"), CASES, ids=[f"{p}:{c}" for p, c in CASES])
def test_a_shown_command_parses(page: str, line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the pages' example paths are the repository's
    parses(line)


def test_a_wrong_option_or_command_is_found() -> None:
    with pytest.raises(Exception, match="--no-such-option"):
        parses("thermrig run examples/sim-two-slots.toml --no-such-option")
    with pytest.raises(AssertionError, match="no command 'nosuch'"):
        parses("thermrig rig nosuch")
