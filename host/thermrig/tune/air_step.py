"""A chassis-air step on a rig, judged as the hold figures are (settle to ±0.5 °C, overshoot, steady
error): how `thermrig rig tune --check`, the tests and bench/bench_tune.py tell whether a loop's gains
hold the air."""

from __future__ import annotations

import contextlib
import queue

import numpy as np

from thermrig.analysis.step_response import StepResponse, step_response
from thermrig.link.frames import newest
from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Telemetry
from thermrig.tune.relay import AIR, TuneError

BAND_C = 0.5
FINAL_WINDOW_S = 60.0
APPLY_WAIT_S = 10.0  # of rig time for the step's settings to show in the telemetry


def air_step(link: RigLink, rise_c: float, seconds: float, fan_pct: float = 40.0) -> StepResponse:
    """The air target `rise_c` over the air now, heater limit full scale, chassis fan at `fan_pct`, for
    `seconds` of rig time, with the gains the rig runs; the response of the air the rig reads. Heater off
    afterwards, however it ends."""
    q: queue.Queue[Telemetry] = link.subscribe()
    try:
        first = newest(q, _next(q))  # the rig's present, not a frame a busy host has yet to read
        target = first.named(AIR).value + rise_c
        link.set(air=round(target * 100), hlim=1000, heat=1, fan0=round(fan_pct * 10))
        # The step starts at the first frame that carries it, not when the host read its last frame (a
        # busy host reads late; counted from there, the step would look slower than the loop is).
        while not (tel := _next(q)).heat_enabled or abs(tel.air_target_c - round(target * 100) / 100) > 0.005:
            if tel.faults:
                raise TuneError(f"the rig faulted during the step: {tel.faults!r}")
            if (tel.uptime_ms - first.uptime_ms) / 1000 > APPLY_WAIT_S:
                raise TuneError(f"the rig did not take the step's settings within {APPLY_WAIT_S:g} s")
        first = tel
        t, air = [0.0], [tel.named(AIR).value]
        while (tel.uptime_ms - first.uptime_ms) / 1000 < seconds:
            tel = _next(q)
            if tel.faults:
                raise TuneError(f"the rig faulted during the step: {tel.faults!r}")
            t.append((tel.uptime_ms - first.uptime_ms) / 1000)
            air.append(tel.named(AIR).value)
    finally:
        link.unsubscribe(q)
        with contextlib.suppress(Exception):
            link.set(heat=0)
    return step_response(np.array(t), np.array(air), target, BAND_C, FINAL_WINDOW_S)


def _next(q: queue.Queue[Telemetry]) -> Telemetry:
    try:
        return q.get(timeout=10)
    except queue.Empty as exc:
        raise TuneError("no telemetry from the rig for 10 s during the step") from exc
