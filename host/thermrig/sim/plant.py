"""Lumped thermal network of the rig (docs/plant.md): room, heater element, chassis air, drive board,
drive controller, optional heatsink; fans with spin-up that set airflow and convection."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from thermrig.hardware.profiles import ChassisParams, DriveThermalParams, SlotParams

SUBSTEPS = 4  # explicit Euler substeps per control tick; the fastest node (controller) has tau ~2 s


@dataclass
class FanModel:
    """4-wire PWM fan: duty to steady RPM per the Intel spec, first-order spin-up."""

    params: ChassisParams
    rpm: float = 0.0
    stalled: bool = False  # a seized rotor (fault injection)

    def steady_rpm(self, duty: float) -> float:
        p = self.params
        if duty <= 0.0 or self.stalled:
            return 0.0
        frac_min = p.fan_min_rpm_fraction
        if duty <= p.fan_min_duty:
            return p.fan_max_rpm * frac_min
        return p.fan_max_rpm * (frac_min + (1.0 - frac_min) * (duty - p.fan_min_duty) / (1.0 - p.fan_min_duty))

    def step(self, duty: float, dt: float) -> None:
        if self.stalled:  # a seized rotor stops dead
            self.rpm = 0.0
            return
        target = self.steady_rpm(duty)
        self.rpm += (target - self.rpm) * (1.0 - math.exp(-dt / self.params.fan_spinup_s))

    @property
    def airflow(self) -> float:
        """Airflow as a fraction of the fan's maximum (proportional to RPM)."""
        return self.rpm / self.params.fan_max_rpm


@dataclass
class ThermalState:
    heater: float
    air: float
    sink: float
    board: float
    ctrl: float


@dataclass
class Plant:
    chassis: ChassisParams
    slot: SlotParams
    drive_thermal: DriveThermalParams  # the drive's thermal figures with its cooling (heatsink, board)
    room_c: float | None = None  # None: the chassis profile's room temperature
    drive_power_w: float = field(default=0.0)
    t: float = 0.0

    def __post_init__(self) -> None:
        if self.room_c is None:
            self.room_c = self.chassis.room_c
        self.drive_power_w = self.drive_thermal.idle_power_w
        r = self.room_c
        self.state = ThermalState(heater=r, air=r, sink=r, board=r, ctrl=r)
        self.fans = [FanModel(self.chassis), FanModel(self.chassis)]
        self.heater_duty = 0.0
        self.fan_duty = [0.0, 0.0]
        self.heater_fault: str | None = None  # "stuck-on" (welded switch) or "open" (broken element)

    # --- derived quantities --------------------------------------------------------------------

    @property
    def slot_air_c(self) -> float:
        """Air temperature around the drive: the slot's share of the chassis-air rise."""
        return self.room_c + self.slot.air_coupling * (self.state.air - self.room_c)

    @property
    def heater_output_w(self) -> float:
        """Heat the heater element gives the chassis air now (its fins' exchange, lagging the duty)."""
        return max(0.0, self.chassis.g_heater_air * (self.state.heater - self.state.air))

    @property
    def air_speed(self) -> float:
        """Air speed at the drive, m/s: the chassis fan's, the slot fan's, and the heater's exhaust (the GPU
        stand-in's) where the slot sits in it, growing with the heat the heater gives off."""
        s = self.slot
        exhaust = s.v_heater * self.heater_output_w / self.chassis.heater_max_w
        return s.v_chassis_fan * self.fans[0].airflow + s.v_slot_fan * self.fans[1].airflow + exhaust

    def h_conv(self) -> float:
        d = self.drive_thermal
        return d.h_still + d.h_forced * math.sqrt(self.air_speed)

    # --- integration ---------------------------------------------------------------------------

    def step(self, dt: float) -> None:
        """Advance dt seconds with the current actuator values."""
        for fan, duty in zip(self.fans, self.fan_duty, strict=True):
            fan.step(duty, dt)
        c, d, s = self.chassis, self.drive_thermal, self.state
        h = self.h_conv()
        g_air_room = c.g_still + c.g_fan * self.fans[0].airflow
        g_board_air = h * d.board_area + d.g_board_connector
        g_ctrl_air = h * d.ctrl_area
        has_sink = d.sink_capacity > 0.0
        g_sink_air = h * d.sink_area if has_sink else 0.0
        duty = {"stuck-on": 1.0, "open": 0.0}.get(self.heater_fault or "", self.heater_duty)
        p_heater = c.heater_max_w * duty
        p_ctrl = self.drive_power_w * d.ctrl_power_fraction
        p_board = self.drive_power_w - p_ctrl
        h_dt = dt / SUBSTEPS
        # The substeps on local names (the same arithmetic in the same order as on the state's fields):
        # the planner's rig model steps the plant a million times for a campaign.
        room, coupling = self.room_c, self.slot.air_coupling
        assert room is not None
        g_heater_air, g_ctrl_board, g_ctrl_sink, g_board_sink = (
            c.g_heater_air,
            d.g_ctrl_board,
            d.g_ctrl_sink,
            d.g_board_sink,
        )
        heater_cap, air_cap, ctrl_cap, board_cap, sink_cap = (
            c.heater_capacity,
            c.air_capacity,
            d.ctrl_capacity,
            d.board_capacity,
            d.sink_capacity,
        )
        heater, air, sink, board, ctrl = s.heater, s.air, s.sink, s.board, s.ctrl
        for _ in range(SUBSTEPS):
            local = room + coupling * (air - room)
            q_heater_air = g_heater_air * (heater - air)
            q_ctrl_board = g_ctrl_board * (ctrl - board)
            q_ctrl_sink = g_ctrl_sink * (ctrl - sink) if has_sink else 0.0
            q_board_sink = g_board_sink * (board - sink) if has_sink else 0.0
            q_sink_air = g_sink_air * (sink - local)
            heater += h_dt * (p_heater - q_heater_air) / heater_cap
            air += h_dt * (q_heater_air - g_air_room * (air - room)) / air_cap
            ctrl += h_dt * (p_ctrl - q_ctrl_board - q_ctrl_sink - g_ctrl_air * (ctrl - local)) / ctrl_cap
            board += h_dt * (p_board + q_ctrl_board - q_board_sink - g_board_air * (board - local)) / (board_cap)
            if has_sink:
                sink += h_dt * (q_ctrl_sink + q_board_sink - q_sink_air) / sink_cap
            else:
                sink = board  # the heatsink channel's thermocouple sits on the bare label
        s.heater, s.air, s.sink, s.board, s.ctrl = heater, air, sink, board, ctrl
        self.t += dt
