"""`thermrig db ...`: the local InfluxDB server and the spool; `thermrig query`: InfluxQL."""

from __future__ import annotations

import csv
import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from thermrig.campaign.rundir import mark_all_stored
from thermrig.cli.fitted_tables import fitted
from thermrig.cli.late import complete_summaries, say_incomplete
from thermrig.cli.user_errors import user_errors
from thermrig.db import schema
from thermrig.db.influx_settings import configured
from thermrig.db.local_server2 import LocalInflux2
from thermrig.db.query import influxql
from thermrig.db.server_preflight import check as preflight
from thermrig.db.spool import pending_spools, spool_dir, spool_folders
from thermrig.db.target import choose_server, local_server, resolve_settings
from thermrig.db.writer import SpoolWriter, WriteProblem

app = typer.Typer(rich_markup_mode=None, help="The local InfluxDB server and the durable spool.", no_args_is_help=True)


ServerOpt = Annotated[
    int | None,
    typer.Option(
        "--server",
        min=1,
        max=2,
        help="1: InfluxDB 1.x (the default); 2: InfluxDB 2.x, onboarded with an org, a bucket and tokens. "
        "Remembered: later commands start the same one. Default: the one running, else the last chosen.",
    ),
]


@app.command()
@user_errors
def up(server: ServerOpt = None) -> None:
    """Start the local InfluxDB (1.13.2 by default, or 2.8.0 with --server 2; loopback only, data under your
    data dir, its port kept across restarts). Idempotent. With --server 2 it prints the settings an agent
    and an analyst use."""
    console = Console()
    if server is not None:
        other = local_server(3 - server)
        if other.state() is not None:
            raise typer.BadParameter(
                f"the local InfluxDB {3 - server}.x runs at {other.url}: `thermrig db down` stops it first",
                param_hint="--server",
            )
        choose_server(server)
    local = local_server(server)
    url = local.up()
    if not isinstance(local, LocalInflux2):
        console.print(f"[green]InfluxDB running[/] at {url}, database thermrig, data in {local.root}")
        return
    o = local.onboarding()
    console.print(
        f"[green]InfluxDB 2.x running[/] at {url}, org {o.org}, bucket {o.bucket} (InfluxQL database "
        f"{o.database}), data in {local.root}; the operator token is in {local.tokens_file} (mode 0600)",
        soft_wrap=True,
    )
    console.print(agent_settings(local), markup=False, highlight=False, soft_wrap=True)


def agent_settings(local: LocalInflux2) -> str:
    """What an agent (writes) and an analyst (reads) set, as environment lines and as config.toml."""
    o = local.onboarding()
    common = {"URL": local.url, "ORG": o.org, "BUCKET": o.bucket, "DATABASE": o.database}
    env = [f"THERMRIG_INFLUX_{k}={v}" for k, v in common.items()]
    toml = [f'{k.lower()} = "{v}"' for k, v in common.items()]
    return "\n".join(
        [
            "an agent (writes the points) sets:",
            *(f"  {line}" for line in [*env, f"THERMRIG_INFLUX_TOKEN={o.write_token}"]),
            "an analyst (reads them) sets:",
            *(f"  {line}" for line in [*env, f"THERMRIG_INFLUX_READ_TOKEN={o.read_token}"]),
            "or in ~/.config/thermrig/config.toml (token for an agent, read_token for an analyst):",
            "  [influx]",
            *(f"  {line}" for line in [*toml, f'token = "{o.write_token}"', f'read_token = "{o.read_token}"']),
            "on this machine thermrig uses them by itself while no other server is configured",
        ]
    )


@app.command()
@user_errors
def down() -> None:
    """Stop the local InfluxDB (1.x or 2.x, whichever runs)."""
    local = local_server()
    stopped = local.down()
    which = "2.x" if isinstance(local, LocalInflux2) else "1.x"
    Console().print(f"[green]InfluxDB {which} stopped" if stopped else "InfluxDB was not running")


@app.command()
@user_errors
def status() -> None:
    """Where points go, whether the server answers, and what waits in the spool."""
    console = Console()
    remote = configured()
    local = local_server()
    which = "2.x" if isinstance(local, LocalInflux2) else "1.x"
    if remote is not None:
        console.print(f"writing to {remote.describe()}")
    elif local.state() is not None:
        console.print(
            f"local InfluxDB {which} running at {local.url}, {local.size_bytes() / 1e6:.1f} MB in {local.root}"
        )
    else:
        console.print(
            f"local InfluxDB {which} not running (`thermrig db up`); no remote server configured", soft_wrap=True
        )
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
def check() -> None:
    """Check the configured InfluxDB (or the local one) as `thermrig run` does before any rig time is
    spent: it answers, the token may write to the bucket, the read token may read, InfluxQL finds the
    database (2.x: a DBRP mapping). Writes nothing. Exit 1 with one line per failure and its fix."""
    console = Console()
    result = preflight(resolve_settings(start_local=False))
    for c in result.checks:
        mark = "[green]ok[/]" if c.ok else "[red]FAIL[/]"
        console.print(f"{mark} {escape(c.line)}", soft_wrap=True, highlight=False)
    if not result.ok:
        raise typer.Exit(1)


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
