"""`thermrig grafana [--out DIR]`: write the Grafana dashboards and provisioning files (docs/grafana.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from thermrig.grafana.provisioning import write


def grafana(
    out: Annotated[Path, typer.Option("--out", help="Folder to write provisioning/ and dashboards/ into.")] = Path(
        "docs/grafana"
    ),
) -> None:
    """Generate the Grafana dashboards (live run, campaign overview) and the provisioning files for an
    InfluxQL data source, from code (grafana-foundation-sdk). See docs/grafana.md."""
    for path in write(out):
        typer.echo(str(path))
