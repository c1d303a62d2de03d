"""`thermrig rig record`: stream the rig's telemetry into InfluxDB, durably, until stopped."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live

from thermrig.cli.errors import user_errors
from thermrig.config import resolve_port
from thermrig.db.local_server import resolve_settings
from thermrig.db.schema import RunTags
from thermrig.db.session import RecordingSession
from thermrig.db.writer import WriteProblem
from thermrig.link.rig_link import RigLink


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
    problems: list[WriteProblem] = []
    with RigLink(resolve_port(port).port) as link:
        link.hello()
        link.start_keepalive()
        session = RecordingSession(link, tags, settings, on_error=problems.append)
        spool, writer, recorder = session.spool, session.writer, session.recorder
        session.start()
        console.print(f"recording run [bold]{tags.run}[/] to {settings.describe()}; spool {spool.path}")
        reason = "stopped by the operator"
        deadline = None if seconds is None else time.monotonic() + seconds
        try:
            with Live(console=console, refresh_per_second=2) as live:
                while deadline is None or time.monotonic() < deadline:
                    time.sleep(0.5)
                    state = "[green]ok[/]" if writer.healthy else f"[red]{problems[-1].message}[/]"
                    air = f"{recorder.last.named('chassis_air').value:.2f} °C" if recorder.last else "-"
                    live.update(
                        f"frames {recorder.stats.frames}  points {recorder.stats.points}  "
                        f"in InfluxDB {writer.points_written}  waiting {spool.pending_bytes() / 1e3:.1f} kB  "
                        f"chassis air {air}  InfluxDB {state}"
                    )
            reason = f"stopped after {seconds:g} s"
        except KeyboardInterrupt:
            pass
        finally:
            session.stop(reason)
            link.command("SAFE")
            done = session.close(flush_timeout=10.0)
    console.print(f"recorded {recorder.stats.frames} frames, {recorder.stats.points} points; rig left safe")
    if not done:
        console.print(f"[yellow]{spool.pending_bytes() / 1e3:.1f} kB wait in the spool: `thermrig db drain` sends them")
