"""`thermrig rig tune`: relay auto-tune of the chassis-air loop; the gains reported, stored for the rig and
sent to it at every connection."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from thermrig.analysis.step_response import StepResponse
from thermrig.cli.rig_options import PortOpt, SpeedOpt
from thermrig.cli.user_errors import user_errors
from thermrig.dut.pacing import Pacing
from thermrig.link.stored_gains import StoredGains, rig_key, save_gains
from thermrig.protocol.messages import Telemetry
from thermrig.testbed import LocalRig, SimulatedRigSpec, open_testbed
from thermrig.tune.air_step import air_step
from thermrig.tune.auto import TuneResult, auto_tune
from thermrig.tune.relay import RelayPlan

CHECK_S = 400.0  # rig time of the --check step


def result_table(r: TuneResult) -> Table:
    ku, tu, a = r.record.ultimate()
    t = Table(title="chassis-air loop gains")
    for col in ("gains", "kp", "ki", "kd"):
        t.add_column(col, justify="left" if col == "gains" else "right")
    for name, g in (("before", r.before), ("tuned (SIMC)", r.gains)):
        t.add_row(name, f"{g.kp:.1f}", f"{g.ki:.2f}", f"{g.kd:.1f}")
    t.caption = f"relay: Ku {ku:.0f} permille/°C, Tu {tu:.0f} s, amplitude {a:.2f} °C over {r.record.t_s[-1]:.0f} s"
    return t


@user_errors
def tune(
    port: PortOpt = None,
    rise: Annotated[float, typer.Option(help="The relay's setpoint over the room, °C.")] = 12.0,
    heater_pct: Annotated[float, typer.Option(help="The relay's heater duty while on, % (bounded power).")] = 100.0,
    fan_pct: Annotated[float, typer.Option(help="Chassis-fan duty while tuning, %.")] = 40.0,
    cycles: Annotated[int, typer.Option(help="Oscillations measured after the first.")] = 3,
    check: Annotated[
        float | None, typer.Option(help="Afterwards, a step of this many °C with the new gains, judged.")
    ] = None,
    speed: SpeedOpt = None,
    sim: Annotated[bool, typer.Option("--sim", help="Tune a fresh simulated rig instead (nothing is stored).")] = False,
    chassis: Annotated[str | None, typer.Option(help="With --sim: a named chassis profile.")] = None,
    heater_x: Annotated[float, typer.Option(help="With --sim: the heater's power times this.")] = 1.0,
    air_x: Annotated[float, typer.Option(help="With --sim: the chassis air's heat capacity times this.")] = 1.0,
    fan_x: Annotated[float, typer.Option(help="With --sim: the fans' conductance times this.")] = 1.0,
) -> None:
    """Relay auto-tune of the chassis-air PID, as Klipper's PID_CALIBRATE: the heater switched between off
    and HEATER_PCT around room + RISE °C for a few cycles (a few minutes of rig time; the firmware's
    safety checks stay in force), a first-order-plus-dead-time model fitted to the record and SIMC gains
    from it. The gains are stored for this rig and sent to it at every connection from then on (delete
    the file shown to go back to the firmware's defaults). The heater is off at the end, however it ends."""
    plan = RelayPlan(rise_c=rise, heater_pct=heater_pct, fan_pct=fan_pct, cycles=cycles)
    console = Console()
    scales = {"heater": heater_x, "air": air_x, "fan": fan_x}
    if not sim and (chassis is not None or any(f != 1.0 for f in scales.values())):
        raise typer.BadParameter("--chassis and --heater-x/--air-x/--fan-x play a chassis: they go with --sim")

    if sim:
        where = SimulatedRigSpec(Pacing.stepped(), chassis=chassis, chassis_scales=scales)
        with open_testbed(where, stored_gains=True) as bed:
            link = bed.link
            result = bed.run(lambda: auto_tune(link, plan))
            console.print(f"model: {result.model.describe()}")
            console.print(result_table(result))
            console.print("simulated rig: the gains are not stored")
            if check is not None:
                link.set(**result.gains.set_args())
                _report_check(console, bed.run(lambda: air_step(link, check, CHECK_S, fan_pct)))
        return
    with open_testbed(LocalRig(port, speed=speed), stored_gains=True) as bed:
        link, info = bed.link, bed.info
        if link.gains is not None:
            console.print(f"the rig runs stored gains {link.gains.gains.describe()} ({link.gains.path})")
        result = auto_tune(link, plan, _progress(console))
        console.print(f"model: {result.model.describe()}")
        console.print(result_table(result))
        note = result.note(plan)
        path = save_gains(rig_key(info, link.usb_serial), result.gains, note)
        link.send_gains(StoredGains(result.gains.bounded(), note, path))  # and after a reset of the rig
        console.print(f"stored in {path}; sent to the rig now and at every connection")
        if check is not None:
            _report_check(console, air_step(link, check, CHECK_S, fan_pct))


def _progress(console: Console) -> Callable[[str, Telemetry], None]:
    last: list[str] = [""]

    def show(what: str, tel: Telemetry) -> None:
        if what != last[0]:
            console.print(f"relay: {what}")
            last[0] = what

    return show


def _report_check(console: Console, r: StepResponse) -> None:
    settle = "never" if r.settle_s is None else f"{r.settle_s:.0f} s"
    console.print(
        f"check step: settles (±0.5 °C) in {settle}, overshoot {r.overshoot_c:.2f} °C, "
        f"steady error {r.steady_error_c:.2f} °C"
    )
