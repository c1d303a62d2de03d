"""`thermrig db ...`: the local InfluxDB server and the spool; `thermrig query`: InfluxQL."""

from __future__ import annotations

import csv
import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from thermrig.campaign.rundir import mark_all_stored
from thermrig.cli.errors import user_errors
from thermrig.cli.late import complete_summaries, say_incomplete
from thermrig.cli.tables import fitted
from thermrig.db import schema
from thermrig.db.local_server import LocalInflux, resolve_settings
from thermrig.db.query import influxql
from thermrig.db.settings import configured
from thermrig.db.spool import pending_spools, spool_dir, spool_folders
from thermrig.db.writer import SpoolWriter, WriteProblem

app = typer.Typer(rich_markup_mode=None, help="The local InfluxDB server and the durable spool.", no_args_is_help=True)


@app.command()
@user_errors
def up() -> None:
    """Start the local InfluxDB (1.13.2, loopback only, data under your data dir). Idempotent."""
    local = LocalInflux.default()
    url = local.up()
    Console().print(f"[green]InfluxDB running[/] at {url}, database thermrig, data in {local.root}")


@app.command()
@user_errors
def down() -> None:
    """Stop the local InfluxDB."""
    stopped = LocalInflux.default().down()
    Console().print("[green]InfluxDB stopped" if stopped else "InfluxDB was not running")


@app.command()
@user_errors
def status() -> None:
    """Where points go, whether the server answers, and what waits in the spool."""
    console = Console()
    remote = configured()
    local = LocalInflux.default()
    if remote is not None:
        console.print(f"writing to {remote.describe()}")
    elif local.state() is not None:
        console.print(f"local InfluxDB running at {local.url}, {local.size_bytes() / 1e6:.1f} MB in {local.root}")
    else:
        console.print("local InfluxDB not running (`thermrig db up`); no remote server configured")
    waiting = pending_spools()
    total = sum(s.pending_bytes() for s in waiting)
    folders = len(spool_folders()) - 1
    console.print(
        f"spool {spool_dir()}"
        + (f" and {folders} campaign folders" if folders else "")
        + f": {len(waiting)} runs with {total / 1e3:.1f} kB not yet in InfluxDB"
        + (" (`thermrig db drain`)" if waiting else ""),
        soft_wrap=True,
    )
    for spool in waiting:
        console.print(
            f"  {spool.path.stem}: {spool.pending_bytes() / 1e3:.1f} kB in {spool.path.parent}", soft_wrap=True
        )
    say_incomplete(console)  # reading writes nothing: `thermrig analyze` completes them


@app.command()
@user_errors
def drain(timeout: Annotated[float, typer.Option(help="Give up after this many seconds.")] = 300.0) -> None:
    """Send every spooled point that InfluxDB has not acknowledged (after an outage or a crash), from
    the spool folder and every campaign folder."""
    console = Console()
    settings = resolve_settings()
    waiting = pending_spools()
    if not waiting:
        console.print("spool empty: nothing to send")
        complete_summaries(settings, console)
        return
    problems: list[WriteProblem] = []
    for spool in waiting:
        writer = SpoolWriter(spool, settings, on_error=problems.append)
        before = spool.pending_bytes()
        done = writer.close(flush_timeout=timeout)
        console.print(
            f"{spool.path.stem}: {writer.points_written} points sent ({before / 1e3:.1f} kB)"
            + ("" if done else " [red]- not finished, still spooled[/]")
        )
        if not done:
            raise typer.Exit(1)
        mark_all_stored(spool.path.parent)  # a campaign run's manifest, if the spool is one
    for p in problems[-3:]:
        console.print(f"[yellow]{p.message}")
    complete_summaries(settings, console)


@user_errors
def query(
    statement: Annotated[str, typer.Argument(help='InfluxQL, e.g. "SELECT * FROM rig_telemetry LIMIT 5".')],
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, csv or json.")] = "table",
    database: Annotated[str | None, typer.Option(help="Database (default: thermrig / the configured one).")] = None,
    epoch: Annotated[str, typer.Option(help="Time format: ns, us, ms, s, or rfc3339.")] = "rfc3339",
) -> None:
    """Run InfluxQL against the configured or local InfluxDB (the v1 /query endpoint: 1.8, 2.x, 3.x)."""
    if fmt not in ("table", "csv", "json"):
        raise typer.BadParameter("format must be table, csv or json")
    series = influxql(resolve_settings(start_local=False), statement, database, "" if epoch == "rfc3339" else epoch)
    if any(m in statement for m in (schema.SUMMARY, schema.CAMPAIGN_SUMMARY)):  # said aside: stdout stays data
        say_incomplete(Console(stderr=True))
    if fmt == "json":
        print(json.dumps([s.__dict__ for s in series], indent=2, default=str))
        return
    if fmt == "csv":
        out = csv.writer(sys.stdout)
        for s in series:
            out.writerow(["name", *s.tags, *s.columns])
            for row in s.values:
                out.writerow([s.name, *s.tags.values(), *row])
        return
    console = Console()
    if not series:
        console.print("no results")
    for s in series:
        title = s.name + "".join(f" {k}={v}" for k, v in s.tags.items())
        table = Table(title=title)
        for col in s.columns:
            table.add_column(col)
        for row in s.values:
            table.add_row(*("" if v is None else str(v) for v in row))
        console.print(fitted(table, console, label=0 if s.columns[:1] == ["time"] else None))
