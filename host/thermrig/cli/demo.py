"""`thermrig demo`: the simulated rig brings chassis air from room temperature to a chassis heat profile,
live, recording everything into InfluxDB; then reports settle time and steady-state error, leaves the
rig in its safe state, and reads the run back from InfluxDB."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated

import numpy as np
import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from thermrig.analysis.step_response import StepResponse, step_response
from thermrig.cli.errors import user_errors
from thermrig.cli.view import info_table, telemetry_view
from thermrig.db.local_server import resolve_settings
from thermrig.db.query import influxql
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags
from thermrig.db.settings import InfluxSettings
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter
from thermrig.link.rig_link import RigLink, RigTimeout
from thermrig.hardware.chassis_profiles import load_profile
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

BAND_C = 0.5


@user_errors
def demo(
    profile: Annotated[str, typer.Option(help="Chassis heat profile (hardware/profiles/chassis_profiles.toml).")] = (
        "dual_gpu_load"
    ),
    slot: Annotated[str, typer.Option(help="Slot position of the simulated drive.")] = "top",
    speed: Annotated[float, typer.Option(help="Simulation speed, x real time (1 = real time).")] = 10.0,
    hold: Annotated[float, typer.Option(help="Seconds (simulated) to hold within ±0.5 °C before judging.")] = 90.0,
    timeout: Annotated[float, typer.Option(help="Give up after this many simulated seconds.")] = 900.0,
) -> None:
    """Run the simulated rig through a chassis heat step and report how well it holds the profile."""
    if speed < 1:
        raise typer.BadParameter("speed must be at least 1 (real time)")
    console = Console()
    prof = load_profile(profile)
    if prof.air_c is None:
        raise typer.BadParameter(f"profile {profile!r} does not heat; choose one with an air target")
    cfg = SimConfig(slot=slot, speed=None if speed == 1 else speed)
    console.print(
        f"[bold]thermrig demo[/]: simulated rig, slot {slot}, profile {profile} ({prof.description}), "
        f"{speed:g}x real time"
    )
    influx = resolve_settings()  # the local InfluxDB, started if need be, unless one is configured
    run = datetime.now(UTC).strftime("demo-%Y%m%dT%H%M%SZ")
    tags = RunTags(rig="sim", run=run, campaign="demo", slot=slot, profile=profile)
    spool = Spool.for_run(tags.run)
    writer = SpoolWriter(spool, influx)
    console.print(f"recording run {tags.run} into {influx.describe()}")
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        info = link.hello()
        sim.watch_clock(link.follow_pace)  # the time sync knows the simulated clock's pace
        console.print(info_table(info, sim.port))
        # The heartbeat the firmware demands while heating is counted in its (simulated) seconds.
        link.start_keepalive(interval=min(1.0, 0.5 / speed))
        recorder = Recorder(link, spool, tags)
        writer.start()
        recorder.start()
        start = link.next_telemetry(timeout=5.0)
        console.print(
            f"room {start.named('ambient_t').value:.2f} °C, chassis air {start.named('chassis_air').value:.2f} °C; "
            f"setting {profile}: {prof.set_args()}"
        )
        link.set(**prof.set_args())
        t0 = start.uptime_ms
        times, sensed, true = [], [], []
        in_band_since: float | None = None
        with Live(console=console, refresh_per_second=4) as live:
            last_draw = 0.0
            while True:
                try:
                    tel = link.next_telemetry(timeout=5.0)
                except RigTimeout as exc:
                    raise RigTimeout(f"telemetry stopped during the demo: {exc}") from exc
                if tel.faults:
                    raise RuntimeError(f"the rig faulted during the demo: {tel.faults!r}")
                t = (tel.uptime_ms - t0) / 1000.0
                air = tel.named("chassis_air").value
                times.append(t)
                sensed.append(air)
                true.append(sim.plant.state.air)
                in_band_since = (
                    (in_band_since if in_band_since is not None else t) if abs(air - prof.air_c) <= BAND_C else None
                )
                if time.monotonic() - last_draw > 0.25:
                    last_draw = time.monotonic()
                    phase = "holding" if in_band_since is not None else "approaching"
                    live.update(telemetry_view(tel, link, title=f"{profile}: {phase}, t = {t:5.1f} s"))
                if (in_band_since is not None and t - in_band_since >= hold) or t > timeout:
                    live.update(telemetry_view(tel, link, title=f"{profile}: done at t = {t:5.1f} s"))
                    break
        window = min(60.0, hold)
        resp = step_response(np.array(times), np.array(sensed), prof.air_c, BAND_C, window)
        resp_true = step_response(np.array(times), np.array(true), prof.air_c, BAND_C, window)
        link.command("SAFE")
        safe = link.next_telemetry()
        while safe.heater_pct != 0 or min(safe.fan_pct.values()) < 100:
            safe = link.next_telemetry()
        recorder.stop("demo finished")
        stored = writer.close()
        console.print()
        console.print(_results(prof.air_c, resp, resp_true, link))
        console.print(
            f"[green]rig left safe[/]: heater {safe.heater_pct:.0f} %, fans "
            f"{', '.join(f'{v:.0f} %' for v in safe.fan_pct.values())}, faults {safe.faults.name or 'none'}"
        )
        console.print(_read_back(influx, tags, stored))
        if resp.settle_s is None or t > timeout:
            raise typer.Exit(1)


def _results(target: float, sensed: StepResponse, true: StepResponse, link: RigLink) -> Group:
    t = Table(title=f"chassis-air step to {target:.1f} °C (±{BAND_C} °C band)")
    t.add_column("figure")
    t.add_column("thermocouple (what the rig sees)", justify="right")
    t.add_column("plant truth", justify="right")

    def settle(r: StepResponse) -> str:
        return "never" if r.settle_s is None else f"{r.settle_s:.1f} s"

    t.add_row("settle time", settle(sensed), settle(true))
    t.add_row("overshoot", f"{sensed.overshoot_c:.2f} °C", f"{true.overshoot_c:.2f} °C")
    t.add_row("steady-state error (last 60 s)", f"{sensed.steady_error_c:.3f} °C", f"{true.steady_error_c:.3f} °C")
    t.add_row("steady-state s.d.", f"{sensed.steady_sd_c:.3f} °C", f"{true.steady_sd_c:.3f} °C")
    s = link.stats
    t.add_row("telemetry frames / lost", f"{s.telemetry} / {s.lost_frames}", "")
    return Group(t)


def _read_back(influx: InfluxSettings, tags: RunTags, stored: bool) -> Group:
    """The run as InfluxDB has it: chassis air and heater per 30 s of rig time, and the run's events."""
    run = f"run='{tags.run}'"
    q = (
        f"SELECT count(chassis_air_c), mean(chassis_air_c), max(chassis_air_c) FROM rig_telemetry WHERE {run}; "
        f"SELECT kind, detail FROM run_events WHERE {run}"
    )
    summary, events = influxql(influx, q, epoch="ms")
    count, mean, peak = summary.values[0][1:]
    t = Table(title=f"read back from InfluxDB ({influx.url}): run {tags.run}")
    t.add_column("what")
    t.add_column("value", justify="right")
    t.add_row("telemetry points (rig_telemetry)", str(count))
    t.add_row("chassis air mean / max", f"{mean:.2f} / {peak:.2f} °C")
    for _, kind, detail in events.values:
        t.add_row(f"event {kind}", detail)
    query = f'thermrig query "SELECT chassis_air_c, heater_pct FROM rig_telemetry WHERE {run}"'
    note = "all points stored" if stored else "[yellow]some points still in the spool: thermrig db drain[/]"
    return Group(t, f"{note}; more with: {query}")
