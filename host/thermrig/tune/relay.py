"""The relay experiment of `thermrig rig tune`, as Klipper's PID_CALIBRATE runs one for a heater: the
heater switched between off and a bounded duty H around a setpoint, the chassis air recorded frame by
frame in rig time (any simulation speed), with the heater's duty as the rig reports it.

The relay runs through the firmware's own loop, so every safety check stays in force and keeps its
meaning. While it runs the loop is proportional only, at its highest gain, so while "on" (heating
enabled, the duty limit at H) the output is H: the target is RATCHET_C over the air where it last gained
GAIN_C, moved again each time the air gains GAIN_C more. The air is then always over 5 °C below its
target, so the hold-lost check never arms and the runaway check watches the heating as on any heat-up:
a heater that warms the air keeps moving the target (a move restarts the check's 20 s window once it has
run out); one that stops warming it, or warms it too slowly (open, aimed at the wrong bead, or a setpoint
at the edge of its power: under about 0.03 °C/s on the simulated rig with half the heater), trips it
within about 20 s + 120 °C·s, as on any heat-up. "Off" is heating disabled. At the end, however it ends:
heater off, and the gains the rig ran before set again."""

from __future__ import annotations

import contextlib
import math
import queue
from collections.abc import Callable
from dataclasses import dataclass

from thermrig.errors import ThermrigError
from thermrig.link.rig_link import RigLink
from thermrig.link.stored_gains import Gains
from thermrig.protocol import limits
from thermrig.protocol.messages import Fault, Telemetry

AIR = "chassis_air"
ROOM = "ambient_t"
RATCHET_C = 5.75  # "on": the target this far over the air (past the runaway check's 5 °C) ...
GAIN_C = 0.5  # ... moved each time the air has gained this much (so it never comes within 5 °C)
RELAY_GAINS = Gains(limits.AIR_KP_MAX, 0.0, 0.0)  # kp x 5 °C is far over full scale: the output is the limit


class TuneError(ThermrigError, RuntimeError):
    pass


@dataclass(frozen=True)
class RelayPlan:
    rise_c: float = 12.0  # the relay's setpoint: this far over the room
    heater_pct: float = 100.0  # the relay's "on" duty (bounded power)
    fan_pct: float = 40.0  # the chassis fan while tuning
    cycles: int = 3  # oscillations measured after the first
    band_c: float = 0.3  # switching hysteresis around the setpoint (the thermocouple reads in 0.25 °C)
    max_s: float = 5400.0  # give up after this much rig time

    def __post_init__(self) -> None:
        if not 5 <= self.rise_c <= 40:
            raise TuneError(f"rise {self.rise_c:g} °C must be 5-40 °C over the room")
        if not 10 <= self.heater_pct <= 100:
            raise TuneError(f"heater duty {self.heater_pct:g} % must be 10-100 %")
        if not 0 <= self.fan_pct <= 100:
            raise TuneError(f"fan duty {self.fan_pct:g} % must be 0-100 %")
        if self.cycles < 2:
            raise TuneError("at least 2 cycles are needed to measure an oscillation")


@dataclass(frozen=True)
class RelayRecord:
    """What the relay measured, in rig time from its start."""

    t_s: list[float]
    heater_pm: list[float]  # the heater's duty, permille, as the rig reported it
    air_c: list[float]
    room_c: float  # the room (ambient sensor), averaged
    setpoint_c: float
    heater_pm_on: float  # H
    switch_off_s: list[float]  # when the relay switched off
    peaks_c: list[float]  # the air's peak after each switch-off
    troughs_c: list[float]  # its trough after each switch-on (the first: the start)

    def ultimate(self) -> tuple[float, float, float]:
        """(Ku, Tu, amplitude) of the oscillation after the first cycle (describing function of a relay
        between 0 and H: Ku = 2 H / (pi a)); for the report, the gains come from the model fit."""
        periods = [b - a for a, b in zip(self.switch_off_s[1:], self.switch_off_s[2:], strict=False)]
        amps = [(hi - lo) / 2 for hi, lo in zip(self.peaks_c[1:], self.troughs_c[2:], strict=False)]
        a = sum(amps) / len(amps)
        return 2 * self.heater_pm_on / (math.pi * a), sum(periods) / len(periods), a


def relay(
    link: RigLink, plan: RelayPlan, restore: Gains, progress: Callable[[str, Telemetry], None] | None = None
) -> RelayRecord:
    """Run the relay on a rig whose link is open and kept alive; `restore`: the gains set again at the end."""
    names = link.info.channels.names if link.info is not None else ()
    missing = [ch for ch in (AIR, ROOM) if ch not in names]
    if missing:
        raise TuneError(f"the rig has no channel {', '.join(missing)}: tuning needs chassis air and room")
    h = round(plan.heater_pct * limits.FULL_SCALE_PM / 100)
    q = link.subscribe()
    t_s: list[float] = []
    duty: list[float] = []
    air_c: list[float] = []
    rooms: list[float] = []
    offs: list[float] = []
    peaks: list[float] = []
    troughs: list[float] = []
    try:
        tel = _next(q)
        setpoint = tel.named(ROOM).value + plan.rise_c
        if setpoint + plan.band_c + RATCHET_C > limits.AIR_TARGET_MAX_C:
            raise TuneError(f"setpoint {setpoint:.1f} °C: the relay needs {RATCHET_C:g} °C under the rig's limit")
        link.set(heat=0, fan0=round(plan.fan_pct * 10), **RELAY_GAINS.set_args())
        t0 = tel.uptime_ms
        on = False
        gained_from = -math.inf  # the air when the target was last moved
        troughs.append(tel.named(AIR).value)
        while len(offs) < plan.cycles + 2:
            tel = _next(q)
            t = (tel.uptime_ms - t0) / 1000
            air = tel.named(AIR).value
            if tel.faults:
                raise TuneError(_fault(tel, max(air_c, default=air), setpoint, bool(offs)))
            if t > plan.max_s:
                why = _why(max(air_c, default=air), setpoint, plan.band_c)
                raise TuneError(f"no steady oscillation within {plan.max_s:.0f} s of rig time: {why}")
            t_s.append(t)
            duty.append(tel.heater_pct * 10)
            air_c.append(air)
            rooms.append(tel.named(ROOM).value)
            if on and air > setpoint + plan.band_c:
                link.set(heat=0)
                on = False
                offs.append(t)
                peaks.append(air)
            elif not on and air < setpoint - plan.band_c:
                if offs:
                    troughs.append(air)
                on = True
                gained_from = -math.inf
            if on:
                troughs[-1] = min(troughs[-1], air)
            elif peaks:
                peaks[-1] = max(peaks[-1], air)
            if on and air >= gained_from + GAIN_C:
                gained_from = air
                link.set(air=round((air + RATCHET_C) * 100), hlim=h, heat=1)
            if progress is not None:
                progress(f"{'on ' if on else 'off'} {len(offs)}/{plan.cycles + 2} cycles", tel)
    finally:
        link.unsubscribe(q)
        with contextlib.suppress(Exception):
            link.set(heat=0, **restore.set_args())
    return RelayRecord(t_s, duty, air_c, sum(rooms) / len(rooms), setpoint, h, offs, peaks, troughs)


def _fault(tel: Telemetry, highest: float, setpoint: float, oscillating: bool) -> str:
    what = f"the rig latched {tel.faults!r} during the auto-tune"
    if tel.faults == Fault.HEATER_RUNAWAY and not oscillating:
        return (
            f"{what}: the air stopped rising at {highest:.1f} °C, short of the setpoint {setpoint:.1f} °C "
            f"({setpoint - highest:.1f} °C more). "
            "The heater cannot reach it at this duty and fan (lower --rise or the fan, or raise --heater-pct), "
            "or it does not warm the chassis-air bead (check its wiring and where it points)"
        )
    return what


def _why(highest: float, setpoint: float, band_c: float) -> str:
    if highest <= setpoint + band_c:
        return (
            f"the air never got over {setpoint + band_c:.1f} °C (highest {highest:.1f} °C): "
            "the heater cannot reach it at this duty and fan; lower --rise or the fan, or raise --heater-pct"
        )
    return "the oscillation did not settle"


def _next(q: queue.Queue[Telemetry]) -> Telemetry:
    try:
        return q.get(timeout=10)
    except queue.Empty as exc:
        raise TuneError("no telemetry from the rig for 10 s during the auto-tune") from exc
