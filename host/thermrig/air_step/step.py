"""A chassis-air step: record a rig while it brings the chassis air to a heat profile's target, until the
air has held within BAND_C for a while (rig time) or a timeout; judge the step (settle time, overshoot,
steady-state error) as the thermocouple saw it and, on a simulated rig, as the plant truly was; leave
the rig safe; read the run back from InfluxDB."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from thermrig.analysis.step_response import StepResponse, step_response
from thermrig.db import schema
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql
from thermrig.db.recording_session import RecordingSession
from thermrig.db.schema import RunTags
from thermrig.hardware.chassis_profiles import ChassisProfile
from thermrig.link.rig_link import RigTimeout
from thermrig.protocol.messages import Telemetry
from thermrig.testbed import Testbed

BAND_C = 0.5
TELEMETRY_TIMEOUT_S = 5.0


class StepError(RuntimeError):
    pass


@dataclass
class ReadBack:
    """The run as InfluxDB has it: its chassis-air points and its events."""

    count: int
    mean_c: float
    max_c: float
    events: list[tuple[str, str]]
    query: str  # a query for more


@dataclass
class StepOutcome:
    target_c: float
    t_s: float  # rig time at the end, from the first frame
    timed_out: bool
    sensed: StepResponse
    true: StepResponse | None  # the plant's own air: a simulated rig only
    safe: Telemetry  # the first frame with the heater off and the fans full
    stored: bool  # every point in InfluxDB
    read_back: ReadBack


def read_back(influx: InfluxSettings, run: str) -> ReadBack:
    where = f"run='{run}'"
    q = (
        f"SELECT count(chassis_air_c), mean(chassis_air_c), max(chassis_air_c) FROM {schema.TELEMETRY} WHERE {where}; "
        f"SELECT kind, detail FROM {schema.EVENTS} WHERE {where}"
    )
    summary, events = influxql(influx, q, epoch="ms")
    count, mean, peak = summary.values[0][1:]
    more = f"SELECT chassis_air_c, heater_pct FROM {schema.TELEMETRY} WHERE {where}"
    return ReadBack(count, mean, peak, [(kind, detail) for _, kind, detail in events.values], more)


def wait_safe(bed: Testbed) -> Telemetry:
    """The rig put safe through its testbed, then the first frame that shows it: heater off, every fan full."""
    bed.safe(checked=True)
    safe = bed.link.next_telemetry()
    while safe.heater_pct != 0 or min(safe.fan_pct.values()) < 100:
        safe = bed.link.next_telemetry()
    return safe


def run_step(
    bed: Testbed,
    influx: InfluxSettings,
    tags: RunTags,
    profile: ChassisProfile,
    hold_s: float,
    timeout_s: float,
    truth: Callable[[], float] | None = None,
    on_start: Callable[[Telemetry], None] | None = None,
    on_frame: Callable[[Telemetry, float, str], None] | None = None,
) -> StepOutcome:
    """The step, recorded from start to end. truth: the plant's own chassis air (a simulated rig);
    on_start gets the first frame, on_frame every frame with its time and the phase: "approaching",
    "holding" (within the band) or "done"."""
    if profile.air_c is None:
        raise StepError("the profile does not heat; choose one with an air target")
    target = profile.air_c
    link = bed.link
    session = RecordingSession(link, tags, influx)
    session.start()
    start = link.next_telemetry(timeout=TELEMETRY_TIMEOUT_S)
    if on_start is not None:
        on_start(start)
    link.set(**profile.set_args())
    times, sensed, true = [], [], []
    in_band_since: float | None = None
    t = 0.0
    while True:
        try:
            tel = link.next_telemetry(timeout=TELEMETRY_TIMEOUT_S)
        except RigTimeout as exc:
            raise RigTimeout(f"telemetry stopped during the step: {exc}") from exc
        if tel.faults:
            raise StepError(f"the rig faulted during the step: {tel.faults!r}")
        t = (tel.uptime_ms - start.uptime_ms) / 1000.0
        air = tel.named("chassis_air").value
        times.append(t)
        sensed.append(air)
        if truth is not None:
            true.append(truth())
        inside = abs(air - target) <= BAND_C
        in_band_since = (in_band_since if in_band_since is not None else t) if inside else None
        done = (in_band_since is not None and t - in_band_since >= hold_s) or t > timeout_s
        if on_frame is not None:
            on_frame(tel, t, "done" if done else "holding" if in_band_since is not None else "approaching")
        if done:
            break
    window = min(60.0, hold_s)
    response = step_response(np.array(times), np.array(sensed), target, BAND_C, window)
    response_true = step_response(np.array(times), np.array(true), target, BAND_C, window) if true else None
    safe = wait_safe(bed)
    session.stop("air step finished")
    stored = session.close()
    return StepOutcome(target, t, t > timeout_s, response, response_true, safe, stored, read_back(influx, tags.run))
