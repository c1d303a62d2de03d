"""`thermrig examples`: the example campaigns thermrig ships (the package's data), listed or copied into
a folder of the user's to run and edit."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from thermrig.cli.user_errors import user_errors
from thermrig.errors import ThermrigError
from thermrig.paths import packaged
from thermrig.toml_file import TomlFile


class ExamplesError(ThermrigError, RuntimeError):
    pass


def _description(path: Path) -> str:
    """The example's [campaign] description ("" when it has none or cannot be read)."""
    try:
        r = TomlFile.read(path)
        campaign = r.get(r.data, "campaign", "campaign", dict, "a [campaign] table", {})
        description: str = r.get(campaign, "campaign", "description", str, "text", "")
    except ThermrigError:
        return ""
    return description


@user_errors
def examples(
    copy: Annotated[
        Path | None,
        typer.Option(help="Copy the examples (with the fio jobs and traces they use) into this folder."),
    ] = None,
) -> None:
    """List the example campaigns thermrig ships, or copy them (--copy DIR) to run and edit.

    `thermrig run DIR/first-virtual-950pro.toml` is a few minutes on the simulated rig with a virtual
    drive (docs/install.md); docs/campaigns.md describes every key.
    """
    source = packaged("examples")
    if not source.is_dir():
        raise ExamplesError(f"no examples at {source}: this installation lacks the package's data; reinstall it")
    console = Console()
    if copy is not None:
        clashes = sorted(p.name for p in source.iterdir() if (copy / p.name).exists())
        if clashes:
            raise ExamplesError(f"{copy} already holds {', '.join(clashes)}: copy into a new or empty folder")
        shutil.copytree(source, copy, dirs_exist_ok=True)
        console.print(f"copied {len(list(copy.glob('*.toml')))} example campaigns into {copy}", highlight=False)
        return
    table = Table("campaign", "what it runs", box=None)
    for path in sorted(source.glob("*.toml")):
        table.add_row(path.name, _description(path))
    console.print(table)
    console.print(f"in {source}; `thermrig examples --copy DIR` copies them", highlight=False, soft_wrap=True)
