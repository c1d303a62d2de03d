"""`thermrig sim step`: the simulated rig brings chassis air from room temperature to a chassis heat profile,
live, recording everything into InfluxDB; then reports settle time and steady-state error, leaves the
rig in its safe state, and reads the run back from InfluxDB (the procedure: thermrig.air_step.step)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from thermrig.air_step.step import BAND_C, ReadBack, StepOutcome, run_step
from thermrig.analysis.step_response import StepResponse
from thermrig.cli.user_errors import user_errors
from thermrig.cli.view import info_table, telemetry_view
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.schema import RunTags
from thermrig.db.target import resolve_settings
from thermrig.dut.pacing import Pacing
from thermrig.hardware.chassis_profiles import load_profile
from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Telemetry
from thermrig.testbed import SimulatedRigSpec, open_testbed


@user_errors
def step(
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
    console.print(
        f"[bold]thermrig sim step[/]: simulated rig, slot {slot}, profile {profile} ({prof.description}), "
        f"{speed:g}x real time"
    )
    influx = resolve_settings()  # the local InfluxDB, started if need be, unless one is configured
    run = datetime.now(UTC).strftime("step-%Y%m%dT%H%M%SZ")
    tags = RunTags(rig="sim", run=run, campaign="air-step", slot=slot, profile=profile)
    console.print(f"recording run {tags.run} into {influx.describe()}")
    # The heartbeat the firmware demands while heating is counted in its (simulated) seconds: the
    # testbed paces it, and tells the time sync the simulated clock's pace.
    with open_testbed(SimulatedRigSpec(Pacing.of_speed(speed), slot=slot), stored_gains=True) as bed:
        console.print(info_table(bed.info, bed.port))
        with Live(console=console, refresh_per_second=4) as live:
            view = _StepView(console, live, bed.link, profile, prof.set_args())
            sim = bed.sim
            assert sim is not None  # a simulated rig's testbed
            outcome = run_step(bed, influx, tags, prof, hold, timeout, sim.chassis_air_c, view.started, view.frame)
        _say_outcome(console, outcome, bed.link, influx, tags)
        if outcome.sensed.settle_s is None or outcome.timed_out:
            raise typer.Exit(1)


@dataclass
class _StepView:
    """The step as it goes: its first frame in a line, then every frame live (at most four a second)."""

    console: Console
    live: Live
    link: RigLink
    profile: str
    set_args: dict[str, int]
    last_draw: float = 0.0

    def started(self, tel: Telemetry) -> None:
        self.console.print(
            f"room {tel.named('ambient_t').value:.2f} °C, chassis air {tel.named('chassis_air').value:.2f} °C; "
            f"setting {self.profile}: {self.set_args}"
        )

    def frame(self, tel: Telemetry, t: float, phase: str) -> None:
        if phase == "done" or time.monotonic() - self.last_draw > 0.25:
            self.last_draw = time.monotonic()
            doing = "done at" if phase == "done" else f"{phase},"
            title = f"{self.profile}: {doing} t = {t:5.1f} s"
            self.live.update(telemetry_view(tel, self.link, title=title))


def _say_outcome(console: Console, outcome: StepOutcome, link: RigLink, influx: InfluxSettings, tags: RunTags) -> None:
    console.print()
    console.print(_results(outcome, link))
    safe = outcome.safe
    console.print(
        f"[green]rig left safe[/]: heater {safe.heater_pct:.0f} %, fans "
        f"{', '.join(f'{v:.0f} %' for v in safe.fan_pct.values())}, faults {safe.faults.name or 'none'}"
    )
    console.print(_read_back(influx, tags, outcome.read_back, outcome.stored))


def _results(outcome: StepOutcome, link: RigLink) -> Group:
    sensed, true = outcome.sensed, outcome.true
    assert true is not None
    t = Table(title=f"chassis-air step to {outcome.target_c:.1f} °C (±{BAND_C} °C band)")
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


def _read_back(influx: InfluxSettings, tags: RunTags, back: ReadBack, stored: bool) -> Group:
    """The run as InfluxDB has it: its chassis-air points and its events."""
    t = Table(title=f"read back from InfluxDB ({influx.url}): run {tags.run}")
    t.add_column("what")
    t.add_column("value", justify="right")
    t.add_row("telemetry points (rig_telemetry)", str(back.count))
    t.add_row("chassis air mean / max", f"{back.mean_c:.2f} / {back.max_c:.2f} °C")
    for kind, detail in back.events:
        t.add_row(f"event {kind}", detail)
    note = "all points stored" if stored else "[yellow]some points still in the spool: thermrig db drain[/]"
    return Group(t, f'{note}; more with: thermrig query "{back.query}"')
