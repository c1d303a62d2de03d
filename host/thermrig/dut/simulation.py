"""What a procedure may do to a simulated rig beyond what it does to any rig over its link: move the
drive and fit a heatsink (an operator's job on a real rig), change its pace, advance a stepped
simulation, inject faults, and read what its actuators really do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from thermrig.dut.faults import FaultKind
from thermrig.dut.pacing import Pacing

T = TypeVar("T")

FIRMWARES = (
    "rigsim",
    "zephyr",
    "zephyr-board",
    "micropython",
    "micropython-pico",
    "micropython-rp2040",
)  # what a simulated rig can run (thermrig.sim.firmware)


class FaultControl(Protocol):
    def inject(self, kind: FaultKind | str, channel: int = 0, value: float | None = None) -> Any: ...

    def refusal(self, kind: FaultKind) -> str | None: ...

    def clear(self) -> None: ...


class SimulationControl(Protocol):
    @property
    def pacing(self) -> Pacing: ...

    @property
    def faults(self) -> FaultControl: ...

    def set_physical(self, slot: str | None = None, heatsink: str | None = None) -> None: ...

    def set_pacing(self, pacing: Pacing) -> None: ...

    def advance(self, seconds: float) -> None: ...

    def run_alongside(self, link: Any, work: Callable[[], T]) -> T:
        """A stepped simulation with a host procedure: work() runs while virtual time advances, the host's
        heartbeat on link (a RigLink) between steps; its result, or its exception raised."""
        ...

    def chassis_air_c(self) -> float:
        """The chassis air's true temperature in the plant (what the air bead reads, less its noise)."""
        ...

    def watch_clock(self, listener: Callable[[Any, float], None]) -> None:
        """Tell listener the clock's pace (a link's ClockPace) and the UTC it runs from, now and at
        every speed change: the host's time sync restarts its fit there (RigLink.follow_pace)."""
        ...

    def follow_host(self, link: Any) -> None:
        """The host's frames on link (a RigLink) hold the simulation's time faster than real time, so it
        never asks the host to be more punctual than a real rig does (thermrig.sim.host_gate)."""
        ...

    def touch(self, place: str, held: bool = True) -> None:
        """An operator holds (or lets go of) the thermocouple bead at a place: it warms to skin temperature."""
        ...

    def actuators(self) -> tuple[float, list[float]]:
        """The heater's and the fans' duty (0-1) the plant receives, whatever the link says."""
        ...

    def driven(self) -> tuple[float, list[float]]:
        """The duties the firmware drives at the plant's present time: the plant applies them over its
        next step, so actuators() shows them a step later."""
        ...
