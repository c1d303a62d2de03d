"""The planner's rig model (thermrig.dut.rig_model): the simulator's plant with the drive profile's
thermal figures, its thermocouples (lag, noise, the MAX31855's 0.25 °C steps, one seeded random source as
the simulated rig's wires draw it), the firmware's chassis-air control and telemetry (model_link.py), and
the drive model's heat for a workload in place of fio (sim/workload_heat.py, as sim/plant_replay.py heats the
plant: the drive busy flat out with the workload's pattern). All of it in the caller's thread, a control tick
per frame read: no firmware process, no serial line, no heartbeat, so a plan's walk takes what its arithmetic
takes.

A campaign whose chassis profiles play a recorded air trace (campaign.trace_player: a player thread
sets the air target as the rig's frames come) walks the stepped simulated rig on rigsim instead
(stepped_rig_model), where that thread has frames of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from thermrig.dut.pacing import Pacing
from thermrig.dut.replay import Pattern
from thermrig.dut.rig_model import RigModel
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.link.rig_link import RigLink
from thermrig.protocol.channels import ChannelMap
from thermrig.sim.sensors import MAX31855_STEP_C
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.sim.wires import TC_PLACES, TICK_S
from thermrig.sim.workload_heat import WorkloadHeat
from thermrig.testbed.model_link import ModelLink
from thermrig.virtual_drive.drive_model import DriveModel

T = TypeVar("T")
PING_TIMEOUT_S = 10.0  # per attempt: a machine busy with other work starves rigsim; the model's time waits
STEP_S = 2.0  # virtual time per PING (the firmware's host timeout is 3 s): half the pings of 1 s
# A frame a rig second (SET rate=1000; the firmware's default is every tick): the phases judge the same
# moments within a second, and the equilibrium's fit a tenth of the points. The Puget matrix's top slot
# (16 runs, seed 2016) planned 2.0675 h this way against 2.0668 h with a frame a tick, its equilibria
# 0.4200 h against 0.4198 h, its cool-downs 0.3142 h against 0.3136 h.
TELEMETRY_S = 1.0
# The channels rigsim declares (firmware/core/rig_channels.c), the thermocouples in the wires' order.
CHANNELS = "tc{i}:{name}"
OTHERS = "amb:ambient_t,rh:ambient_rh,rpm0:fan0,rpm1:fan1"


class _SimulatedRigModel:
    """What both models share: the stepped simulated rig with the drive profile, its drive not served, and
    the drive model's heat for a workload."""

    def __init__(self, drive_profile: str) -> None:
        self._rig = SimulatedRig(SimConfig(pacing=Pacing.stepped(), drive=drive_profile, serve_drive=False))
        self._heat = WorkloadHeat(DriveModel(load_drive_profile(drive_profile)))

    @property
    def sim(self) -> SimulatedRig:
        return self._rig

    def heat(self, pattern: Pattern | None) -> None:
        self._heat.busy(pattern)


class DirectRigModel(_SimulatedRigModel):
    """The simulated rig's plant and sensors (a SimulatedRig built, never started: its set_physical and
    stepped pacing are the phases' simulation control) under ModelLink's firmware, in one thread."""

    def __init__(self, drive_profile: str) -> None:
        super().__init__(drive_profile)
        self._ticks = 0
        sensors = self._rig.sensors
        tcs = ",".join(CHANNELS.format(i=i, name=n) for i, n in enumerate(sensors.tc_names))
        c = self._rig.plant.chassis
        room = self._rig.plant.room_c
        assert room is not None
        self._beads = [(tc, TC_PLACES[place]) for tc, place in zip(sensors.tcs, sensors.tc_places, strict=True)]
        self._gauss = sensors.rng.gauss
        self._amb_noise = (c.amb_noise_c, c.rh_noise_pct)
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
        temps = [round(tc.sample(place(p), dt) / MAX31855_STEP_C) * MAX31855_STEP_C for tc, place in self._beads]
        gauss = self._gauss
        gauss(0.0, self._amb_noise[0])
        gauss(0.0, self._amb_noise[1])
        return round(p.t * 1e6), temps

    @property
    def link(self) -> ModelLink:
        return self._link

    def run(self, work: Callable[[], T]) -> T:
        return work()

    def close(self) -> None:
        pass


class SteppedRigModel(_SimulatedRigModel):
    """The stepped simulated rig on rigsim, the drive model's heat in a plant hook; work runs in a thread
    beside the plant, which advances STEP_S at a time."""

    def __init__(self, drive_profile: str) -> None:
        super().__init__(drive_profile)
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
