"""`thermrig report CAMPAIGN [--out DIR]`: the campaign's HTML report, figures and tables, from InfluxDB."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from thermrig.campaign.rundir import unsent_runs
from thermrig.cli.late import say_incomplete
from thermrig.cli.user_errors import user_errors
from thermrig.db.target import resolve_settings
from thermrig.report.build import write_report


@user_errors
def report(
    campaign: Annotated[str, typer.Argument(help="Campaign name (the campaign tag in InfluxDB).")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for report.html, the PNGs, CSV and JSON [default: report-CAMPAIGN]."),
    ] = None,
) -> None:
    """One self-contained HTML report (figures embedded), PNG plots and every table as CSV and JSON, all
    read from InfluxDB: the onset/depth table in the seeds' form, throughput and temperatures per run,
    throughput against controller temperature, the sensor ranking, factor effects, consistency."""
    settings = resolve_settings(start_local=False)
    folder = out if out is not None else Path(f"report-{campaign}")
    console = Console()
    say_incomplete(console, campaign)  # reading writes nothing: `thermrig analyze` completes them
    with Console(stderr=True).status(f"reading {campaign} from InfluxDB and drawing"):
        r = write_report(settings, campaign, folder, pending=set(unsent_runs(campaign)))
    console.print(
        f"{r.html} ({r.html.stat().st_size / 1e6:.1f} MB) and {len(r.files) - 1} files in {folder}", markup=False
    )
    for line in r.missing:
        console.print(f"missing: {line}", markup=False)
