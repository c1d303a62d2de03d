"""The planner's rig without a firmware process or a serial line: the firmware's chassis-air control
(firmware/core/pid.c and rig.c's control step, in floating point as the C core runs it), its SET and its
telemetry, over a world that one control tick at a time steps the plant and reads the thermocouples
(testbed/simulated_rig_model.py). Time advances only as the caller reads: each frame taken from a subscription is
the next control tick's, so a campaign's phases walk the model in their own thread, as fast as the
machine computes it, with no heartbeat, no pty and nothing to wait for.

What the planner needs of a rig and nothing more: no faults, no fan speed loop (SET rpm), no time sync
(frames carry the rig's uptime; the phases ask for no UTC); the PID's gains are the firmware's own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from thermrig.errors import ThermrigError
from thermrig.link.timesync import TimeSync
from thermrig.protocol import limits
from thermrig.protocol.channels import ChannelKind, ChannelMap
from thermrig.protocol.messages import ChannelStatus, Fault, Reading, RigInfo, Telemetry

# What a tick of the world returns: the plant time (us) of the sample, and each thermocouple's reading
# (degC, as the MAX31855 reads it) in the channel map's order.
Tick = Callable[[float, float, float], tuple[int, list[float]]]  # (heater, fan0, fan1 duty 0-1) -> sample
FULL = limits.FULL_SCALE_PM
OK = ChannelStatus(0)
NO_FAULT = Fault(0)


class ModelError(ThermrigError):
    """The planner's rig model was asked for something a real rig's firmware does that it does not."""


@dataclass
class AirPid:
    """firmware/core/pid.c: derivative on the measurement, first-order filtered; conditional integration
    as anti-windup, the integrator kept inside the actuator range."""

    kp: float = limits.AIR_KP
    ki: float = limits.AIR_KI
    kd: float = limits.AIR_KD
    d_filter_s: float = limits.AIR_D_FILTER_S
    integral: float = 0.0
    prev: float = 0.0
    d_state: float = 0.0
    primed: bool = False

    def reset(self) -> None:
        self.integral, self.prev, self.d_state, self.primed = 0.0, 0.0, 0.0, False

    def update(self, setpoint: float, measured: float, dt: float) -> float:
        err = setpoint - measured
        if not self.primed:
            self.prev, self.primed = measured, True
        raw_d = (measured - self.prev) / dt if dt > 0 else 0.0
        self.prev = measured
        alpha = dt / (self.d_filter_s + dt) if self.d_filter_s > 0 else 1.0
        self.d_state += alpha * (raw_d - self.d_state)
        p_d = self.kp * err - self.kd * self.d_state
        candidate = self.integral + self.ki * err * dt
        unclamped = p_d + candidate
        if not (unclamped > FULL and err > 0) and not (unclamped < 0 and err < 0):
            self.integral = candidate
        self.integral = min(max(self.integral, 0.0), float(FULL))
        return min(max(p_d + self.integral, 0.0), float(FULL))


@dataclass
class _Outputs:
    """What the firmware drives and was told (permille, centi-degC), as rig.c keeps it."""

    air_cc: int = 0
    heat: bool = False
    hlim_pm: int = FULL
    heater_pm: int = 0
    fan_pm: list[int] = field(default_factory=lambda: [0, 0])


class _Frames:
    """A subscription: get() is the next frame, the model stepped to it."""

    def __init__(self, link: ModelLink) -> None:
        self._link = link

    def get(self, timeout: float | None = None) -> Telemetry:
        return self._link.next_frame()


class ModelLink:
    """In place of a RigLink for the campaign's phases: set(), subscribe() and unsubscribe(), the rig's
    info and port; one reader at a time."""

    def __init__(self, tick: Tick, channels: ChannelMap, room_c: float, room_rh: float, period_ticks: int = 1) -> None:
        """period_ticks: a frame every that many control ticks (SET rate= sets it too)."""
        self.port = "the planner's rig model"
        self.info = RigInfo("model", "0", 0, "model", channels)
        self.sync = TimeSync()  # never fitted: the model's frames carry uptime only
        self._tick = tick
        self._channels = channels
        tcs = channels.of_kind(ChannelKind.THERMOCOUPLE)
        self._tc_keys = [c.key for c in tcs]
        self._air = [c.name for c in tcs].index("chassis_air")
        self._ambient = {c.key: Reading(round(room_c * 100) / 100, OK) for c in channels.of_kind(ChannelKind.AMBIENT_T)}
        self._ambient.update(
            {c.key: Reading(round(room_rh * 10) / 10, OK) for c in channels.of_kind(ChannelKind.HUMIDITY)}
        )
        self._rpm_keys = [c.key for c in channels.of_kind(ChannelKind.FAN_RPM)]
        self._temp_keys = [c.key for c in channels.temperatures]
        humidity = channels.of_kind(ChannelKind.HUMIDITY)
        self._humidity = self._ambient[humidity[0].key] if humidity else Reading(0.0, OK)
        self._rpm = {k: Reading(0.0, OK) for k in self._rpm_keys}  # the fans' speed loop is not modelled
        self._order = list(channels)
        self._out = _Outputs()
        self._pid = AirPid()
        self._period_ticks = period_ticks
        self._ticks = 0
        self._seq = 0

    def set(self, **values: int) -> None:
        """rig_cmd.c's SET for the keys the phases send: the air target, heating on or off (the PID
        restarted as it comes on), the heater's limit (holding from now), each fan's duty, the telemetry
        period."""
        unknown = set(values) - {"air", "heat", "hlim", "fan0", "fan1", "rate"}
        if unknown:
            raise ModelError(f"the planner's rig model takes no SET {', '.join(sorted(unknown))}")
        o = self._out
        if "air" in values:
            o.air_cc = values["air"]
        if "hlim" in values:
            o.hlim_pm = values["hlim"]
            o.heater_pm = min(o.heater_pm, o.hlim_pm)
        if "heat" in values:
            on = values["heat"] == 1
            if on and not o.heat:
                self._pid.reset()
            o.heat = on
        for i in (0, 1):
            if f"fan{i}" in values:
                o.fan_pm[i] = values[f"fan{i}"]
        if values.get("rate"):
            self._period_ticks = max(1, round(values["rate"] / 1000 / limits.TICK_S))

    def subscribe(self) -> _Frames:
        return _Frames(self)

    def unsubscribe(self, frames: _Frames) -> None:
        pass

    def next_frame(self) -> Telemetry:
        while True:
            frame = self._step()
            if frame is not None:
                return frame

    def _step(self) -> Telemetry | None:
        """One control tick: the plant over the tick at the outputs driven after the last sample, then
        rig.c's step on the new sample (the air loop, the fans at their duty), its frame when one is due."""
        o = self._out
        t_us, temps = self._tick(o.heater_pm / FULL, o.fan_pm[0] / FULL, o.fan_pm[1] / FULL)
        air_cc = round(temps[self._air] * 100)
        if o.heat:
            duty = self._pid.update(o.air_cc / 100, air_cc / 100, limits.TICK_S)
            o.heater_pm = min(int(duty + 0.5), o.hlim_pm)
        else:
            self._pid.reset()
            o.heater_pm = 0
        self._ticks += 1
        if (self._ticks - 1) % self._period_ticks:
            return None
        self._seq += 1
        readings = {k: Reading(round(v * 100) / 100, OK) for k, v in zip(self._tc_keys, temps, strict=True)}
        readings.update(self._ambient)
        readings.update(self._rpm)
        ordered = {k: readings[k] for k in self._order}
        return Telemetry(
            seq=self._seq,
            uptime_ms=t_us // 1000,
            temps={k: ordered[k] for k in self._temp_keys},
            humidity=self._humidity,
            rpm=self._rpm,
            heater_pct=limits.pct_of_pm(o.heater_pm),
            fan_pct={f"fan{i}": limits.pct_of_pm(pm) for i, pm in enumerate(o.fan_pm)},
            air_target_c=o.air_cc / 100,
            heat_enabled=o.heat,
            heat_limit_pct=limits.pct_of_pm(o.hlim_pm),
            faults=NO_FAULT,
            rx_errors=0,
            channels=self._channels,
            readings=ordered,
        )

    def close(self) -> None:
        pass
