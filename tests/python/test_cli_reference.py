"""docs/cli.md is generated from the command definitions (`make docs`); it must match them."""

from __future__ import annotations

from pathlib import Path

import typer

from thermrig.cli.main import app
from thermrig.cli.reference import markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_cli_reference_page_is_the_one_the_commands_generate() -> None:
    assert DOC.read_text() == markdown(app), "docs/cli.md is stale: run `make docs`"


def test_every_command_and_option_appears_in_the_reference() -> None:
    page = markdown(app)
    root = typer.main.get_command(app)
    for name, cmd in root.commands.items():
        assert f"## `thermrig {name}`" in page
        for p in getattr(cmd, "params", []):
            if p.param_type_name == "option" and not p.hidden:
                assert f"`{p.opts[0]}`" in page, (name, p.opts[0])


def test_a_new_option_makes_the_page_stale() -> None:
    extra = typer.Typer()

    @extra.command()
    def probe(level: int = typer.Option(3, help="A level.")) -> None:
        """Probe."""

    @extra.command()
    def other() -> None:
        """Other."""

    before = markdown(extra)

    @extra.command()
    def third(flag: bool = typer.Option(False, "--flag", help="A flag.")) -> None:
        """Third."""

    after = markdown(extra)
    assert "`--level` INT: A level. [default: 3]" in before
    assert "`--flag`: A flag." in after and "`--flag`" not in before
