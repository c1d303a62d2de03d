"""Every command's options and help, walked from the command definitions: a short option means one thing
across the whole CLI, and help text is wrapped to the terminal it is shown in, not where the docstring was
hard-wrapped."""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from itertools import pairwise
from typing import Any

import typer
from click.testing import CliRunner

from thermrig.cli.main import app
from thermrig.cli.reference import _walk

WIDTH = 80


@cache
def _cli() -> Any:
    """The click command tree typer builds from the app: built once, each --help page read from it."""
    return typer.main.get_command(app)


def _commands() -> list[tuple[tuple[str, ...], Any]]:
    return list(_walk(_cli(), ()))


def _short_meanings() -> dict[str, set[str]]:
    """Each short option (-p) and the long options it stands for, over every command."""
    meanings: dict[str, set[str]] = defaultdict(set)
    for _, cmd in _commands():
        for param in cmd.params:
            names = (*param.opts, *param.secondary_opts)
            long = next((n for n in names if n.startswith("--")), param.name)
            for short in (n for n in names if len(n) == 2 and n.startswith("-")):
                meanings[short].add(long)
    return meanings


def test_the_walk_reaches_every_command_and_its_short_options() -> None:
    paths = {" ".join(p) for p, _ in _commands()}
    assert {"flash", "rig selftest", "lab hold", "lab plan", "plan"} <= paths
    assert {"-p", "-n", "-x"} <= set(_short_meanings())


def test_a_short_option_means_one_thing_across_every_command() -> None:
    two = {short: sorted(longs) for short, longs in _short_meanings().items() if len(longs) > 1}
    assert two == {}
    assert _short_meanings()["-p"] == {"--port"}


def test_flash_takes_the_port_as_every_rig_command_does() -> None:
    result = CliRunner().invoke(_cli(), ["flash", "-p", "/dev/ttyACM0", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "HELLO on /dev/ttyACM0" in result.output


def _description(help_text: str) -> list[list[str]]:
    """The paragraphs of a --help page's description (between the usage line and the options)."""
    lines = help_text.splitlines()
    body = lines[1 : next(i for i, line in enumerate(lines) if line.startswith(("Options:", "Arguments:")))]
    paragraphs: list[list[str]] = [[]]
    for line in body:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def test_help_is_wrapped_to_the_terminal() -> None:
    """In every command's description, each line but a paragraph's last is as full as the terminal allows:
    the next line's first word would not have fitted on it."""
    runner = CliRunner()
    broken: list[str] = []
    for path, _ in _commands():
        result = runner.invoke(_cli(), [*path, "--help"], env={"COLUMNS": str(WIDTH)}, terminal_width=WIDTH)
        assert result.exit_code == 0, (path, result.output)
        assert max(len(line) for line in result.output.splitlines()) <= WIDTH, path
        for paragraph in _description(result.output):
            for line, after in pairwise(paragraph):
                if 2 + len(line) + 1 + len(after.split()[0]) <= WIDTH:
                    broken.append(f"thermrig {' '.join(path)}: {line!r} / {after!r}")
    assert broken == []
