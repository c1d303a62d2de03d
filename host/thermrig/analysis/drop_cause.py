"""Thermal, cache or host? Each throughput drop of a campaign's runs, classified (docs/analysis.md):

- a drop is a fall of the measured job's throughput below (1 - FALL) of the median of the 3 seconds
  before it, for HOLD seconds in a row, with the median of the 3 seconds past its first below too (a
  dip that is back at the level is the host, not the drive); after one, the next is looked for once
  the level has settled, or at once after one the host stalled in every second of (throttle.find_falls:
  a cache that runs out just after a stall is found against the level before the stall);
- it is placed by the bytes written by then: the drive's own count (smart-log data_units_written) at
  the knee of that count where it is recorded, else fio's at the drive's scale at the moment a step
  from the level before loses what its seconds lost; and checked against the drive's own account
  around it (DRIVE_WINDOW_MS): a power-state change or a TMT counter step;
- **cache**: no power-state change or TMT step at it, and a drop at the same bytes written (within
  SAME_BYTES, or a second of writes: the per-second log a busy host writes) in every other chassis condition
  of the same workload: the SLC cache runs out after the same writes whatever the temperature;
- **thermal**: at a power-state change or TMT step (or while the drive is already in a throttled power
  state: the throttle deepening), and at bytes written no other condition drops at (it moves with
  temperature);
- **host**: no power-state change or TMT step at it, and the host shows a stall (analysis.attribution:
  the simulator's replies late, the virtual drive with nothing in flight, fio's latency flat while its
  I/O count fell, or the level back within seconds) in every second of the fall: a stall in its first
  seconds only, the level staying down after them, is passed over and the drop judged by the seconds
  after;
- **unclear** otherwise, with the reason (e.g. the drive's power state is not recorded).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from thermrig.analysis.attribution import (
    WRITTEN_UNIT_BYTES,
    WRITTEN_UNITS,
    Evidence,
    account_moves,
    attribute,
    stall_judge,
)
from thermrig.analysis.run_data import RunData
from thermrig.analysis.throttle import FALL, SETTLE_S, find_falls, level_after, step_moment
from thermrig.analysis.throttle_summary import job_series, latency_series, measured_job

SAME_BYTES = 0.1  # relative; at least 1 GB
COUNTERS = ("power_state", "tmt1_count", "tmt2_count", "ocp_throttle_events")


@dataclass(frozen=True)
class Drop:
    run: str
    condition: str  # the chassis condition: the run's factors but the workload
    workload: str
    at_s: int  # seconds into the measured job
    at_ms: int
    written_gb: float  # drive bytes written by the job before the drop, GB
    before_bps: float
    after_bps: float
    drive_events: tuple[str, ...]  # "power_state 0->1", "tmt1_count +1" around the drop
    drive_state_known: bool
    cause: str = ""
    why: str = ""
    host: str = ""  # the host's stall at it, when analysis.attribution calls the drop the host's


def throttle_state(data: RunData, at_ms: int) -> float:
    """The drive's power state just before the drop (0 = full speed; 0 when not recorded)."""
    trace = data.counters.get("power_state")
    if trace is None:
        return 0.0
    before = trace.between(at_ms - 3000, at_ms).values
    return float(before[-1]) if len(before) else 0.0


def _events(data: RunData, at_ms: int) -> tuple[tuple[str, ...], bool]:
    known = any(name in data.counters for name in COUNTERS)  # a real drive: its TMT counters
    return account_moves(data.counters, COUNTERS, at_ms), known


def run_drops(data: RunData) -> list[Drop]:
    job = measured_job(data.jobs)
    start, series = job_series(job)
    if start is None:
        return []
    writes = [log for log in job if log.direction == "write"]
    _, written = job_series(writes) if writes else (None, [])
    condition = _condition(data)
    evidence = Evidence(data.counters, start, latency_series(job, start))
    out = []
    for fall in find_falls(series, stall_judge(series, evidence, FALL)):
        i = fall.at
        at_ms = start + i * 1000
        events, known = _events(data, at_ms)
        state = throttle_state(data, at_ms)
        if not events and state > 0:  # the throttle deepening within a throttled power state
            events = (f"in power_state {state:g}",)
        out.append(
            Drop(
                data.run,
                condition,
                data.tags.get("workload", ""),
                i,
                at_ms,
                _written_gb(data, start, i, written, fall.before),
                fall.level / data.scale,
                level_after(series, i, SETTLE_S) / data.scale,
                events,
                known,
                host=attribute(series, i, fall.level, evidence, FALL).why if fall.host else "",
            )
        )
    return out


def written_at_drop(written: list[float], i: int, level_seconds: Sequence[int] = ()) -> float:
    """The bytes the job had written when its level fell at second i, placed within its seconds: the
    moment a step from the level before (the median of level_seconds, the seconds find_falls took it from;
    default the SETTLE_S before i) would lose what seconds i-1 and i lost (throttle.step_moment), so a
    cache running out early or late in a second, or a second before the one the drop is found in, reads
    the same bytes."""
    if i < 1 or i + 1 >= len(written):
        return sum(written[:i])
    seconds = [j for j in level_seconds if j < len(written)] or range(max(0, i - SETTLE_S), i)
    before = statistics.median(written[j] for j in seconds)
    at = step_moment(written, i - 1, i, before)
    return sum(written[: i - 1]) + (at - (i - 1)) * before


def _written_gb(data: RunData, start_ms: int, i: int, written: list[float], level_seconds: Sequence[int]) -> float:
    """GB written by the job before the drop at second i: the drive's own count where it is recorded, else
    fio's bytes at the drive's scale."""
    counted = drive_written(data, start_ms, i)
    return (counted if counted is not None else written_at_drop(written, i, level_seconds) / data.scale) / 1e9


def drive_written(data: RunData, start_ms: int, i: int) -> float | None:
    """The bytes the drive itself counted as written (smart-log data_units_written, in drive_smart; a
    scaled virtual drive counts as the drive it models) from the job's start to the knee of that count at
    the drop found at second i: where the line of its rate before the drop meets the line of its rate after
    (each the median of SETTLE_S sample intervals, anchored at the last sample before second i and the first
    after second i + 2). None where the count is not recorded around the job's start and the knee. fio's
    per-second log on a busy host moves bytes between its seconds, and a stall there moves where a step
    would fall; the drive's count, sampled apart from fio, does neither, and its rate before the knee is
    the drive's own."""
    trace = data.counters.get(WRITTEN_UNITS)
    if trace is None or len(trace.t_ms) < 2 or i < 1 or not trace.t_ms[0] <= start_ms:
        return None
    t = np.asarray(trace.t_ms, dtype=float)
    v = np.asarray(trace.values, dtype=float) * WRITTEN_UNIT_BYTES
    a = int(np.searchsorted(t, start_ms + 1000 * i, side="right")) - 1  # the last sample before second i
    b = int(np.searchsorted(t, start_ms + 1000 * (i + 2), side="left"))  # the first after second i + 2
    if a < SETTLE_S or b + SETTLE_S >= len(t):
        return None
    rate = np.diff(v) / np.diff(t)  # bytes per ms, each interval's
    before = float(np.median(rate[a - SETTLE_S : a]))
    after = float(np.median(rate[b : b + SETTLE_S]))
    if before <= after:
        return None
    knee_ms = float(np.clip((v[b] - v[a] + before * t[a] - after * t[b]) / (before - after), t[a], t[b]))
    return float(v[a] + before * (knee_ms - t[a]) - np.interp(start_ms, t, v))


def _same_bytes(a: Drop, b: Drop) -> bool:
    """Within SAME_BYTES of the larger (at least 1 GB), or within a second of writes at the faster rate
    before them: fio's per-second log of a host that was busy moves bytes between neighbouring seconds,
    and a second of writes (3 GB at 3 GB/s) is more than a tenth of a 22 GB cache."""
    second_gb = max(a.before_bps, b.before_bps) / 1e9
    return abs(a.written_gb - b.written_gb) <= max(1.0, SAME_BYTES * max(a.written_gb, b.written_gb), second_gb)


def _condition(data: RunData) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(data.factors().items()) if k != "workload")


def classify(runs: Iterable[RunData]) -> list[Drop]:
    """Every drop of every run, with its cause, compared across the chassis conditions of its workload
    (a condition without any drop counts: a drop it lacks moved)."""
    runs = list(runs)
    drops = [d for data in runs for d in run_drops(data)]
    out = []
    for d in drops:
        others = {_condition(r) for r in runs if r.tags.get("workload", "") == d.workload} - {d.condition}
        same = {o.condition for o in drops if o.condition in others and _same_bytes(o, d)}
        if d.host and not d.drive_events:
            cause, why = "host", d.host
        elif not d.drive_state_known:
            cause, why = "unclear", "the drive's power state and TMT counters are not recorded"
        elif not others:
            cause, why = "unclear", "one chassis condition only: nothing to compare the bytes written with"
        elif d.drive_events and not same:
            cause, why = "thermal", f"{', '.join(d.drive_events)}; no other condition drops at {d.written_gb:.1f} GB"
        elif not d.drive_events and same == others:
            cause, why = "cache", f"no power-state change; every condition drops at {d.written_gb:.1f} GB written"
        elif d.drive_events:
            cause, why = "unclear", f"{', '.join(d.drive_events)}, but other conditions drop at the same bytes"
        else:
            cause, why = "unclear", "no power-state change, but not at the same bytes in every condition"
        out.append(replace(d, cause=cause, why=why))
    return out
