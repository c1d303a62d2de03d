"""The planner's rig model (thermrig.dut.rig_model): the stepped simulated rig on rigsim, the drive
profile's thermal figures in its plant, and the drive model's heat for a workload in place of fio (as
sim/replay.py steps them: the drive busy flat out with the workload's pattern)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from thermrig.dut.pacing import Pacing
from thermrig.dut.replay import Pattern
from thermrig.dut.rig_model import RigModel
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.link.rig_link import RigLink
from thermrig.sim.plant import Plant
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.sim.wires import TICK_S
from thermrig.virtual_drive.drive_model import DriveModel

T = TypeVar("T")
PING_TIMEOUT_S = 10.0  # per attempt: a machine busy with other work starves rigsim; the model's time waits
STEP_S = 2.0  # virtual time per PING (the firmware's host timeout is 3 s): half the pings of 1 s


class SteppedRigModel:
    def __init__(self, drive_profile: str) -> None:
        self._profile = load_drive_profile(drive_profile)
        self._rig = SimulatedRig(SimConfig(pacing=Pacing.stepped(), drive=drive_profile, serve_drive=False))
        self._model = DriveModel(self._profile)
        self._moved = 0.0
        self._link: RigLink | None = None

    def start(self) -> SteppedRigModel:
        rig = self._rig.start()
        try:
            assert rig.server is not None
            rig.server.hooks.append(self._tick)
            self._link = RigLink(rig.port)
            self._link.hello()
            self._link.unsubscribe(self._link.telemetry_queue)  # nobody drains it here
        except BaseException:
            self.close()
            raise
        return self

    def _tick(self, plant: Plant) -> None:
        """PlantServer hook: the drive's power for the next tick, busy with the pattern or idle."""
        s = plant.state
        plant.drive_power_w = self._model.tick(TICK_S, s.ctrl, s.board, self._moved)
        self._moved = self._model.cap_rate() * TICK_S if self._model.pattern is not None else 0.0

    @property
    def link(self) -> RigLink:
        assert self._link is not None
        return self._link

    @property
    def sim(self) -> SimulatedRig:
        return self._rig

    def heat(self, pattern: Pattern | None) -> None:
        self._model.pattern = pattern
        self._moved = 0.0

    def run(self, work: Callable[[], T]) -> T:
        return self._rig.run_alongside(self.link, work, STEP_S, ping_timeout_s=PING_TIMEOUT_S)

    def close(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None
        self._rig.close()


def rig_model(drive_profile: str) -> RigModel:
    return SteppedRigModel(drive_profile).start()
