"""Fast replay of one calibration cell on the plant and drive model alone: the chassis air held at the
profile's target (as the rig's PID holds it), the drive idle to equilibrium, then a host that always
keeps the drive busy (workload_heat.py). The same Plant and DriveModel the simulated rig runs, without
rig, fio or wall clock: what the bounded fit evaluates thousands of times. The pipeline (`make calibrate`) checks it.
The simulator's side of the calibration's seam (`thermrig.dut.replay.ModelReplay`): the calibration
gets this module from `thermrig calibrate` (cli/calibrate_cmd.py) and never imports it (docs/architecture.md)."""

from __future__ import annotations

import numpy as np

from thermrig.dut.replay import Condition, MixedSweep, SweepStep, Workload
from thermrig.hardware.drive_profiles import DriveProfile
from thermrig.hardware.profiles import ChassisParams
from thermrig.sim.plant import Plant
from thermrig.sim.wires import TICK_S
from thermrig.sim.workload_heat import WorkloadHeat
from thermrig.virtual_drive.drive_model import DriveModel

__all__ = ["replay", "replay_sweep"]

IDLE_DT = 0.5


def _settled(chassis: ChassisParams, drive: DriveProfile, cond: Condition) -> tuple[Plant, DriveModel, float]:
    """The plant with the drive idle at equilibrium at the condition's air: where idle steps converge.
    With the air held and the fans at speed a step of the plant is affine in the drive's temperatures
    (controller, board, heatsink); its fixed point, solved from four probe steps of the same Plant, is
    that equilibrium (what the replay reached after 15 min of idle steps, in a thousandth of the work)."""
    plant = Plant(chassis, cond.slot, drive.thermal(cond.cooling))
    plant.fan_duty = [cond.fan0, cond.fan1]
    for fan, duty in zip(plant.fans, plant.fan_duty, strict=True):
        fan.rpm = fan.steady_rpm(duty)
    air = chassis.room_c if cond.air_c is None else cond.air_c
    s = plant.state
    plant.drive_power_w = drive.idle_power_w
    heater = _hold(plant, air)

    def step(x: np.ndarray) -> np.ndarray:
        s.air, s.heater = air, heater
        s.ctrl, s.board, s.sink = (float(v) for v in x)
        plant.step(IDLE_DT)
        return np.array([s.ctrl, s.board, s.sink])

    origin = np.full(3, air)
    b = step(origin) - origin
    m = np.column_stack([step(origin + e) - origin - b for e in np.eye(3)])  # one kelvin up each node
    s.ctrl, s.board, s.sink = (float(v) for v in origin + np.linalg.lstsq(np.eye(3) - m, b, rcond=None)[0])
    s.air, s.heater = air, heater
    return plant, DriveModel(drive), air


def _hold(plant: Plant, air: float) -> float:
    """The heater as the rig's PID settles it with the chassis air at `air`: its duty giving the air what it
    loses to the room, its element above the air by that power over the fins' conductance. Returns the
    element's temperature (the replay holds it there, as it holds the air)."""
    c = plant.chassis
    power = (c.g_still + c.g_fan * plant.fans[0].airflow) * max(0.0, air - plant.room_c)
    plant.heater_duty = min(1.0, power / c.heater_max_w)
    return air + c.heater_max_w * plant.heater_duty / c.g_heater_air


def replay(
    chassis: ChassisParams, drive: DriveProfile, cond: Condition, work: Workload, states: list[int] | None = None
) -> list[float]:
    """Drive-scale throughput (bytes/s) for each second of the workload. states: gets the drive's power
    state at the end of each second."""
    plant, model, air = _settled(chassis, drive, cond)
    s = plant.state
    heater = s.heater
    heat = WorkloadHeat(model)
    heat.busy(work.pattern)
    if work.preconditioned:
        model.precondition()
    elif work.filled:
        model.fill()
    series: list[float] = []
    acc = 0.0
    per_second = round(1.0 / TICK_S)
    for k in range(round(work.runtime_s / TICK_S)):
        s.air, s.heater = air, heater
        moved = heat.tick(plant)
        plant.step(TICK_S)
        acc += moved
        if (k + 1) % per_second == 0:
            series.append(acc)
            acc = 0.0
            if states is not None:
                states.append(model.state)
    return series


def replay_sweep(chassis: ChassisParams, drive: DriveProfile, cond: Condition, sweep: MixedSweep) -> list[SweepStep]:
    """Seed 000's mixed sweeps: read shares one after another with no pause, on a pre-filled drive."""
    plant, model, air = _settled(chassis, drive, cond)
    model.fill(passes=2)
    s = plant.state
    heater = s.heater
    out = []
    per_second = round(1.0 / TICK_S)
    for pct in sweep.read_pcts:
        series: list[float] = []
        acc = 0.0
        for k in range(round(sweep.step_s / TICK_S)):
            s.air, s.heater = air, heater
            reads, writes = model.flow_mix(TICK_S, pct / 100, sweep.bs, sweep.qd, sweep.sequential)
            plant.drive_power_w = model.tick(TICK_S, s.ctrl, s.board)
            plant.step(TICK_S)
            acc += reads + writes
            if (k + 1) % per_second == 0:
                series.append(acc)
                acc = 0.0
        out.append(SweepStep(pct, series))
    return out
