"""What the calibration fits, as a seam: the simulator's plant and drive model replayed for one cell
without rig, fio or wall clock. The values a replay takes (a workload's pattern, a cell's condition)
and gives (a sweep's steps) are plain data here; the replay itself is the simulator's
(`thermrig.sim.plant_replay`), handed in by `thermrig calibrate` (cli/calibrate_cmd.py), so no
calibration module imports the simulator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from thermrig.hardware.chassis_profiles import load_profile
from thermrig.hardware.drive_profiles import DriveProfile
from thermrig.hardware.profiles import ChassisParams, DriveThermalParams, SlotParams


@dataclass(frozen=True)
class Pattern:
    """A steady workload as a whole, for the fast replay that moves no requests: what the served drive
    works out per request from the LBAs."""

    write: bool
    random: bool
    bs: int  # bytes per request

    def describe(self) -> str:
        return f"{'random' if self.random else 'sequential'} {'write' if self.write else 'read'} {self.bs} B"


@dataclass(frozen=True)
class Condition:
    slot: SlotParams
    cooling: DriveThermalParams  # heatsink and board convection, before the drive's own figures
    air_c: float | None  # chassis air held here; None: no heat, the air stays at room temperature
    fan0: float  # duty 0-1
    fan1: float


def condition(slot: SlotParams, cooling: DriveThermalParams, profile: str) -> Condition:
    """A cell's condition: the slot and cooling given, the air and fans of the named chassis profile."""
    p = load_profile(profile)
    return Condition(slot, cooling, p.air_c, p.fan0_pct / 100.0, p.fan1_pct / 100.0)


@dataclass(frozen=True)
class Workload:
    """A workload the replay runs from the cell's idle equilibrium: its pattern and length, and the drive's
    state at its start. preconditioned: full and past the spare area; filled: full, the spare area still
    fresh (a fill just before); neither: fresh."""

    pattern: Pattern
    runtime_s: float
    preconditioned: bool = False
    filled: bool = False


@dataclass(frozen=True)
class MixedSweep:
    """Seed 000's mixed sweeps: read shares (percent) one after another with no pause, step_s each, at bs
    bytes a request and queue depth qd, sequential or random, on a pre-filled drive."""

    read_pcts: tuple[int, ...]
    bs: int
    qd: int
    step_s: float
    sequential: bool


@dataclass(frozen=True)
class SweepStep:
    read_pct: int
    iops: list[float]  # per second, reads and writes together


class ModelReplay(Protocol):
    def replay(
        self,
        chassis: ChassisParams,
        drive: DriveProfile,
        cond: Condition,
        work: Workload,
        states: list[int] | None = None,
    ) -> list[float]:
        """Drive-scale throughput (bytes/s) for each second of the workload, the air held at the
        condition's (docs/virtual-drive.md). states: gets the drive's power state at the end of each second."""
        ...

    def replay_sweep(
        self, chassis: ChassisParams, drive: DriveProfile, cond: Condition, sweep: MixedSweep
    ) -> list[SweepStep]:
        """The sweep's steps, each with its IOPS per second."""
        ...
