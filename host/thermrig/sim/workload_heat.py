"""The drive model's heat for a workload with no requests served: the drive busy flat out with the
workload's pattern (or idle without one), each tick's power from the bytes the tick before moved at the
rate its power state allows. The plant replay (plant_replay.py) and the planner's rig model
(testbed/simulated_rig_model.py) heat the plant this one way."""

from __future__ import annotations

from thermrig.dut.replay import Pattern
from thermrig.sim.plant import Plant
from thermrig.sim.wires import TICK_S
from thermrig.virtual_drive.drive_model import DriveModel


class WorkloadHeat:
    """The drive model's power for the plant's next tick, busy with its pattern or idle."""

    def __init__(self, model: DriveModel) -> None:
        self.model = model
        self.moved = 0.0  # bytes the pattern moved in the last tick: its work, accounted at the next

    def busy(self, pattern: Pattern | None) -> None:
        """From now on the drive works `pattern` flat out, or idles (None)."""
        self.model.pattern = pattern
        self.moved = 0.0

    def tick(self, plant: Plant) -> float:
        """Set the plant's drive power for its next tick (the last tick's work accounted); returns the bytes
        the pattern moves in that tick."""
        s = plant.state
        plant.drive_power_w = self.model.tick(TICK_S, s.ctrl, s.board, self.moved)
        self.moved = self.model.cap_rate() * TICK_S if self.model.pattern is not None else 0.0
        return self.moved
