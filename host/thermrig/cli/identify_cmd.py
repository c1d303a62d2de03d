"""`thermrig rig identify`: run the chassis step sequence on a rig, fit the plant's chassis to it, and
write a chassis profile that `thermrig sim --chassis NAME` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from thermrig.calibration.chassis_steps import StepPlan, StepSample, record_steps
from thermrig.cli.rig_options import PortOpt, SpeedOpt
from thermrig.cli.user_errors import user_errors
from thermrig.hardware.profiles import chassis_toml, load_chassis
from thermrig.link.rig_link import RigLink
from thermrig.settings import data_dir
from thermrig.sim.chassis_fit import FITTED, ChassisFit, HeldOutStep, Identified, identify_chassis
from thermrig.testbed import LocalRig, open_testbed


def fit_table(fit: ChassisFit) -> Table:
    t = Table(title=f"chassis fit: residual {fit.rms_c:.2f} °C rms, {fit.max_c:.2f} °C max over {fit.seconds} s")
    for col in ("parameter", "start", "identified"):
        t.add_column(col, justify="right" if col != "parameter" else "left")
    for name, _, _ in FITTED:
        t.add_row(name, f"{getattr(fit.start, name):.4g}", f"{getattr(fit.chassis, name):.4g}")
    return t


def held_out_line(h: HeldOutStep) -> str:
    return (
        f"held out: the last step ({h.seconds} s, heater off, fans {h.fan_pct[0]:g} %), predicted by the fit "
        f"without it: {h.rms_c:.2f} °C rms, {h.max_c:.2f} °C max error (that fit's residual on the rest "
        f"{h.fit.rms_c:.2f} °C rms)"
    )


@user_errors
def identify(
    name: Annotated[str, typer.Option(help="Name of the chassis profile to write (letters, digits, - _ .).")],
    port: PortOpt = None,
    heater_w: Annotated[float, typer.Option(help="The heaters' full power, W (their nameplate).")] = 400.0,
    rise: Annotated[float, typer.Option(help="Air target over the room while heating, °C.")] = 8.0,
    heater_pct: Annotated[float, typer.Option(help="Heater duty limit while heating, % (bounded power).")] = 100.0,
    fan_low: Annotated[float, typer.Option(help="Chassis-fan duty of the first half, %.")] = 30.0,
    fan_high: Annotated[float, typer.Option(help="Chassis-fan duty of the second half, %.")] = 100.0,
    heat_s: Annotated[float, typer.Option(help="Heating time per fan level, s of rig time.")] = 600.0,
    cool_s: Annotated[float, typer.Option(help="Cooling time per fan level, s of rig time.")] = 300.0,
    speed: SpeedOpt = None,
    out: Annotated[
        Path | None, typer.Option(help="Where to write the profile (default: the data dir's chassis/NAME.toml).")
    ] = None,
) -> None:
    """Heater steps (the air held RISE °C over the room, then the heater off) at two fan levels, about
    30 min of rig time by default, recorded; the chassis air's
    heat capacity and its conductances to the room still and with the fans fitted to them; a chassis
    profile written that `thermrig sim --chassis NAME` runs. The rig's safety limits stay in force; the
    heater is off and the fans full at the end, however it ends."""
    plan = StepPlan(fan_pct=(fan_low, fan_high), rise_c=rise, heater_pct=heater_pct, heat_s=heat_s, cool_s=cool_s)
    target = out or data_dir() / "chassis" / f"{name}.toml"
    load_chassis()  # the base chassis must read before half an hour of steps is spent
    console = Console()
    with open_testbed(LocalRig(port, speed=speed), stored_gains=True) as bed:
        samples = _record(console, bed.link, plan)
    found = identify_chassis(samples, load_chassis(), heater_w)
    console.print(fit_table(found.fit))
    console.print(held_out_line(found.held) if found.held is not None else f"no held-out error: {found.why}")
    how = f"fans {fan_low:g} % and {fan_high:g} %, air +{rise:g} °C, heater limit {heater_pct:g} % of {heater_w:g} W"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(chassis_toml(found.fit.chassis, _note(name, found, how)))
    console.print(f"wrote {target}: run it with `thermrig sim --chassis {name}`")


def _record(console: Console, link: RigLink, plan: StepPlan) -> list[StepSample]:
    """The steps recorded, a bar showing how far."""
    with Progress(
        TextColumn("identify {task.fields[what]}"), BarColumn(), TimeRemainingColumn(), console=console
    ) as bar:
        task = bar.add_task("steps", total=1.0, what="")

        def progress(done: float, s: StepSample) -> None:
            what = f"fan {s.fan_pct[0]:.0f} %, heater {s.heater_pct:.0f} %, air {s.air_c:.1f} °C"
            bar.update(task, completed=done, what=what)

        return record_steps(link, plan, progress)


def _note(name: str, found: Identified, how: str) -> str:
    """The profile's header: where it came from and how well it fits."""
    fit, held = found.fit, found.held
    return (
        f"Chassis {name!r}, identified by `thermrig rig identify` from {fit.seconds} s of heater steps\n"
        f"({how}); residual {fit.rms_c:.2f} °C rms.\n"
        + (
            f"Out of sample: the last step ({held.seconds} s) predicted by the fit without it to {held.rms_c:.2f} "
            f"°C rms, {held.max_c:.2f} °C max.\n"
            if held is not None
            else ""
        )
        + "Fitted: air capacity and conductances; the rest from the base chassis."
    )
