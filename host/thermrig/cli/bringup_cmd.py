"""`thermrig rig bringup`: a freshly built rig's guided first power-up, step by step with the operator."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from thermrig.bringup.phases import Step, bringup, passed
from thermrig.cli.rig_options import PortOpt
from thermrig.cli.sim_options import SimFirmwareOpt, SimImageOpt
from thermrig.cli.user_errors import user_errors
from thermrig.dut.pacing import Pacing
from thermrig.sim.bringup_operator import SimulatedOperator
from thermrig.sim.simulated_rig import SimulatedRig
from thermrig.testbed import LocalRig, SimulatedRigSpec, open_testbed

COLOURS = {"PASS": "green", "FAIL": "red", "SKIP": "yellow"}


class ConsoleOperator:
    """A person at the rig, told what to do on the terminal."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def touch(self, place: str, channel: str) -> None:
        self.console.print(f"[bold]Now hold the {place} bead ({channel}) between two fingers[/] until told to let go.")

    def let_go(self, place: str) -> None:
        self.console.print(f"[bold]Let go of the {place} bead.[/]")

    def go_ahead(self, question: str) -> bool:
        return typer.confirm(question, default=False)


def parse_swap(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError as exc:
        raise typer.BadParameter(f"--swap {text!r}: two thermocouple numbers, e.g. 0,1") from exc
    return a, b


@user_errors
def bringup_cmd(
    port: PortOpt = None,
    sim: Annotated[
        bool, typer.Option("--sim", help="Run on a fresh simulated rig; the plant plays the touches.")
    ] = False,
    swap: Annotated[
        str | None, typer.Option(help="With --sim: a miswired rig, two thermocouples' chip selects swapped (e.g. 0,1).")
    ] = None,
    firmware: SimFirmwareOpt = "rigsim",
    image: SimImageOpt = None,
) -> None:
    """First power-up of a new rig, heater disconnected until the last step: every thermocouple at room
    temperature and none open, the ambient sensor, a touch of each bead (its own channel must rise, no
    other: a swapped chip select is named), each fan and its tach, then, with your go-ahead, a short heater
    pulse that must warm the chassis air first. One line per step: PASS or FAIL, what it measured, what to
    fix. Exits 1 if any step fails."""
    console = Console()

    def report(step: Step) -> None:
        colour = COLOURS[step.verdict]
        console.print(f"[{colour}]{step.verdict}[/]  {step.name:<20} {step.measured}")
        if step.fix:
            console.print(f"      fix: {step.fix}")

    if sim:
        spec = SimulatedRigSpec(Pacing.stepped(), firmware=firmware, swapped_tcs=parse_swap(swap), image=image)
        with open_testbed(spec, stored_gains=True) as bed:
            assert isinstance(bed.sim, SimulatedRig)  # its operator touches the simulator's beads
            operator = SimulatedOperator(bed.sim.sensors)
            steps = bed.run(lambda: bringup(bed.link, operator, report))
    else:
        if swap is not None:
            raise typer.BadParameter("--swap plays a miswired rig: it goes with --sim")
        if image is not None:
            raise typer.BadParameter("--image runs a simulated rig's firmware: it goes with --sim")
        with open_testbed(LocalRig(port), stored_gains=True) as bed:
            steps = bringup(bed.link, ConsoleOperator(console), report)
    failed = [s.name for s in steps if s.passed is False]
    skipped = [s.name for s in steps if s.passed is None]
    console.print(
        f"{len(steps) - len(failed) - len(skipped)} of {len(steps)} steps passed"
        + (f"; failed: {', '.join(failed)}" if failed else "")
        + (f"; not run: {', '.join(skipped)}" if skipped else "")
    )
    if not passed(steps):
        raise typer.Exit(1)
