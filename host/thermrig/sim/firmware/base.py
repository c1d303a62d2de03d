"""What a firmware launcher gets from the simulated rig and gives back: a running firmware whose serial
port is a stable symlink to a pty, with the MCU reset and the serial-line faults it can suffer."""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from thermrig.children import stop_child
from thermrig.errors import ThermrigError
from thermrig.sim.server import PlantServer
from thermrig.sim.wires import ClockFault, Reset, SerialFault, TickStall


class SimError(ThermrigError, RuntimeError):
    """The simulated rig could not start."""


@dataclass(frozen=True)
class SimTruth:
    """What the firmware's clock really is, for judging time sync against the truth."""

    t0_unix_us: int
    ppm: float
    offset_us: int

    def utc_of_mcu(self, mcu_us: int) -> float:
        """The true UTC (s) at which the MCU's uptime read mcu_us (real-time mode)."""
        return (self.t0_unix_us + (mcu_us - self.offset_us) / (1.0 + self.ppm * 1e-6)) * 1e-6


@dataclass(frozen=True)
class LaunchContext:
    """Everything a launcher needs: the plant's virtual-wires socket and how time runs."""

    plant_sock: str
    link: Path  # the serial port: a symlink to the current pty
    workdir: Path  # the simulation's private temp folder
    server: PlantServer
    realtime: bool  # the firmware's own timer paces the ticks; otherwise the plant does
    ppm: float = 0.0
    offset_us: int = 0
    image: Path | None = None  # the firmware image to run, where a firmware has one (default: the build's)


class Firmware(ABC):
    """A launched firmware: a child process wired to the plant, its serial side at `port`."""

    name: str
    proc: subprocess.Popen[str]
    port: str
    truth: SimTruth
    clock_follows_plant = False  # its uptime is plant time (paced runs of rigsim, MicroPython); QEMU's is its own

    @abstractmethod
    def reset(self, reset: Reset) -> None:
        """Reset the MCU with the cause its EVT BOOT reports."""

    @abstractmethod
    def serial_fault(self, fault: SerialFault) -> None:
        """A serial-line fault: garbage, silence or an unplug."""

    def clock_fault(self, fault: ClockFault) -> bool:
        """The MCU's clock jumps or runs fast: False when this firmware's clock cannot be made to (an
        emulator's, or a MicroPython port's, keeps its own)."""
        return False

    def tick_stall(self, stall: TickStall) -> bool:
        """The MCU's control loop stalls: False when this firmware's loop cannot be made to (an emulator's,
        or a MicroPython port's, runs on its own)."""
        return False

    has_failing_pwm = False  # a PWM driver of its own that pwm_error can make fail

    def pwm_error(self, channel: int, failing: bool) -> bool:
        """The PWM driver of an output (0 heater, 1-2 fans) fails from now on, or works again: False when
        this firmware has no PWM driver of its own that can fail (it hands the plant permille values)."""
        return False

    @abstractmethod
    def settle(self) -> None:
        """Stepped mode: make sure what the firmware sent so far is on the pty."""

    def close(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is None:
            return
        stop_child(proc, grace_s=5.0)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
