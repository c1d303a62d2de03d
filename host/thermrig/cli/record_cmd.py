"""`thermrig rig record`: stream the rig's telemetry into InfluxDB, durably, until stopped."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from thermrig.cli.user_errors import user_errors
from thermrig.db.rig_recording import RecordingStatus, record_rig
from thermrig.db.schema import RunTags
from thermrig.db.target import resolve_settings
from thermrig.testbed import LocalRig, open_testbed


def _tags(rig: str, run: str | None, campaign: str, tag: list[str] | None) -> RunTags:
    extra: dict[str, str] = {}
    allowed = {"slot", "heatsink", "airflow", "profile", "workload", "drive_model"}
    for item in tag or []:
        key, sep, value = item.partition("=")
        if not sep or key not in allowed:
            raise typer.BadParameter(f"--tag {item!r}: use KEY=VALUE with KEY one of {', '.join(sorted(allowed))}")
        extra[key] = value
    run = run or datetime.now(UTC).strftime("run-%Y%m%dT%H%M%SZ")
    return RunTags(rig=rig, run=run, campaign=campaign, **extra)


@user_errors
def record(
    port: Annotated[str | None, typer.Option("--port", "-p", help="Rig device or pyserial URL.")] = None,
    run: Annotated[str | None, typer.Option(help="Run id tag (default: run-<UTC time>).")] = None,
    campaign: Annotated[str, typer.Option(help="Campaign tag.")] = "adhoc",
    rig: Annotated[str, typer.Option(help="Rig name tag, to tell rigs apart.")] = "rig1",
    tag: Annotated[
        list[str] | None, typer.Option(help="Experiment factor, KEY=VALUE (slot, heatsink, airflow, ...).")
    ] = None,
    seconds: Annotated[float | None, typer.Option(help="Stop after this long (default: Ctrl-C).")] = None,
) -> None:
    """Record every telemetry frame and link event into InfluxDB with run tags, until Ctrl-C.

    Points go to a local fsync'd spool first, then to InfluxDB: an outage or a crash loses nothing
    (`thermrig db drain` sends what is left). Stopping flushes and puts the rig in its safe state.
    """
    console = Console()
    tags = _tags(rig, run, campaign, tag)
    settings = resolve_settings()
    with (
        open_testbed(LocalRig(port), stored_gains=True) as bed,
        Live(console=console, refresh_per_second=2, transient=False) as live,
    ):

        def started(spool: str) -> None:
            console.print(f"recording run [bold]{tags.run}[/] to {settings.describe()}; spool {spool}")

        def show(s: RecordingStatus) -> None:
            state = "[green]ok[/]" if s.problem is None else f"[red]{escape(s.problem)}[/]"
            air = "-" if s.chassis_air_c is None else f"{s.chassis_air_c:.2f} °C"
            live.update(
                f"frames {s.frames}  points {s.points}  in InfluxDB {s.in_influx}  "
                f"waiting {s.waiting_bytes / 1e3:.1f} kB  chassis air {air}  InfluxDB {state}"
            )

        done = record_rig(bed.link, tags, settings, seconds, started, show)
    console.print(f"recorded {done.frames} frames, {done.points} points; rig left safe")
    if done.waiting_bytes:
        console.print(f"[yellow]{done.waiting_bytes / 1e3:.1f} kB wait in the spool: `thermrig db drain` sends them")
