"""The planner's rig model (thermrig.dut.rig_model): the simulator's plant with the drive profile's
thermal figures, its thermocouples (lag, noise, the MAX31855's 0.25 °C steps, one seeded random source as
the simulated rig's wires draw it), the firmware's chassis-air control and telemetry (model_link.py), and
the drive model's heat for a workload in place of fio (as sim/plant_replay.py steps it: the drive busy flat out
with the workload's pattern). All of it in the caller's thread, a control tick per frame read: no
firmware process, no serial line, no heartbeat, so a plan's walk takes what its arithmetic takes.

A campaign whose chassis profiles play a recorded air trace (campaign.trace_player: a player thread
sets the air target as the rig's frames come) walks the stepped simulated rig on rigsim instead
(stepped_rig_model), where that thread has frames of its own."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

from thermrig.dut.pacing import Pacing
from thermrig.dut.replay import Pattern
from thermrig.dut.rig_model import RigModel
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.link.rig_link import RigLink
from thermrig.protocol.channels import ChannelMap
from thermrig.sim.plant import Plant
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.sim.wires import TC_PLACES, TICK_S
from thermrig.testbed.model_link import ModelLink
from thermrig.virtual_drive.drive_model import DriveModel

T = TypeVar("T")
PING_TIMEOUT_S = 10.0  # per attempt: a machine busy with other work starves rigsim; the model's time waits
STEP_S = 2.0  # virtual time per PING (the firmware's host timeout is 3 s): half the pings of 1 s
MAX31855_STEP_C = 0.25
# A frame a rig second (SET rate=1000; the firmware's default is every tick): the phases judge the same
# moments within a second, and the equilibrium's fit a tenth of the points. The Puget matrix's top slot
# (16 runs, seed 2016) planned 2.0675 h this way against 2.0668 h with a frame a tick, its equilibria
# 0.4200 h against 0.4198 h, its cool-downs 0.3142 h against 0.3136 h.
TELEMETRY_S = 1.0
# The channels rigsim declares (firmware/core/rig_channels.c), the thermocouples in the wires' order.
CHANNELS = "tc{i}:{name}"
OTHERS = "amb:ambient_t,rh:ambient_rh,rpm0:fan0,rpm1:fan1"


class _Heat:
    """The drive model's power for the next tick, busy with the pattern or idle (sim/plant_replay.py's way)."""

    def __init__(self, drive_profile: str) -> None:
        self.model = DriveModel(load_drive_profile(drive_profile))
        self.moved = 0.0

    def heat(self, pattern: Pattern | None) -> None:
        self.model.pattern = pattern
        self.moved = 0.0

    def tick(self, plant: Plant) -> None:
        s = plant.state
        plant.drive_power_w = self.model.tick(TICK_S, s.ctrl, s.board, self.moved)
        self.moved = self.model.cap_rate() * TICK_S if self.model.pattern is not None else 0.0


class DirectRigModel:
    """The simulated rig's plant and sensors (a SimulatedRig built, never started: its set_physical and
    stepped pacing are the phases' simulation control) under ModelLink's firmware, in one thread."""

    def __init__(self, drive_profile: str) -> None:
        self._rig = SimulatedRig(SimConfig(pacing=Pacing.stepped(), drive=drive_profile, serve_drive=False))
        self._heat = _Heat(drive_profile)
        self._ticks = 0
        sensors = self._rig.sensors
        tcs = ",".join(CHANNELS.format(i=i, name=n) for i, n in enumerate(sensors.tc_names))
        c = self._rig.plant.chassis
        room = self._rig.plant.room_c
        assert room is not None
        self._beads = [
            (tc, TC_PLACES[place], tc.noise_c) for tc, place in zip(sensors.tcs, sensors.tc_places, strict=True)
        ]
        self._gauss = sensors.rng.gauss
        self._amb_noise = (c.amb_noise_c, c.rh_noise_pct)
        self._lag_k = 1.0 - math.exp(-TICK_S / c.tc_lag_s)  # as Thermocouple.sample computes it
        channels = ChannelMap.parse(f"{tcs},{OTHERS}")
        self._link = ModelLink(self._tick, channels, room, c.room_rh, round(TELEMETRY_S / TICK_S))

    def _tick(self, heater: float, fan0: float, fan1: float) -> tuple[int, list[float]]:
        """As the plant server serves a stepped firmware's request: the outputs applied, the drive's power
        for the tick, the plant stepped (not before the first sample), then the sample: each bead's
        reading and the ambient sensor's two draws of noise (so the beads' noise is the wires' own)."""
        p = self._rig.plant
        p.heater_duty = heater
        p.fan_duty = [fan0, fan1]
        self._heat.tick(p)
        dt = TICK_S if self._ticks > 0 else 0.0
        if dt:
            p.step(dt)
        self._ticks += 1
        k = self._lag_k if dt else 0.0
        gauss = self._gauss
        temps = []
        for tc, place, noise in self._beads:  # Thermocouple.sample, inlined
            true = place(p)
            bead = true if tc.value is None else tc.value
            bead += (true - bead) * k
            tc.value = bead
            temps.append(round((bead + gauss(0.0, noise)) / MAX31855_STEP_C) * MAX31855_STEP_C)
        gauss(0.0, self._amb_noise[0])
        gauss(0.0, self._amb_noise[1])
        return round(p.t * 1e6), temps

    @property
    def link(self) -> ModelLink:
        return self._link

    @property
    def sim(self) -> SimulatedRig:
        return self._rig

    def heat(self, pattern: Pattern | None) -> None:
        self._heat.heat(pattern)

    def run(self, work: Callable[[], T]) -> T:
        return work()

    def close(self) -> None:
        pass


class SteppedRigModel:
    """The stepped simulated rig on rigsim, the drive model's heat in a plant hook; work runs in a thread
    beside the plant, which advances STEP_S at a time."""

    def __init__(self, drive_profile: str) -> None:
        self._rig = SimulatedRig(SimConfig(pacing=Pacing.stepped(), drive=drive_profile, serve_drive=False))
        self._heat = _Heat(drive_profile)
        self._link: RigLink | None = None

    def start(self) -> SteppedRigModel:
        rig = self._rig.start()
        try:
            assert rig.server is not None
            rig.server.hooks.append(self._heat.tick)
            self._link = RigLink(rig.port)
            self._link.hello()
            self._link.unsubscribe(self._link.telemetry_queue)  # nobody drains it here
        except BaseException:
            self.close()
            raise
        return self

    @property
    def link(self) -> RigLink:
        assert self._link is not None
        return self._link

    @property
    def sim(self) -> SimulatedRig:
        return self._rig

    def heat(self, pattern: Pattern | None) -> None:
        self._heat.heat(pattern)

    def run(self, work: Callable[[], T]) -> T:
        return self._rig.run_alongside(self.link, work, STEP_S, ping_timeout_s=PING_TIMEOUT_S)

    def close(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None
        self._rig.close()


def rig_model(drive_profile: str) -> RigModel:
    return DirectRigModel(drive_profile)


def stepped_rig_model(drive_profile: str) -> RigModel:
    return SteppedRigModel(drive_profile).start()
