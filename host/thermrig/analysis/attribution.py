"""Thermal, cache or host? The cause of one fall of a run's throughput, from that run's own data
(docs/analysis.md, "Whose fall it is"):

- **thermal**: the drive's own account moved around the fall (DRIVE_WINDOW_MS): its power state, a
  TMT1/TMT2 transition count or time, the OCP extended SMART log's throttling event count; or the drive
  was already in a throttled power state (the throttle deepening);
- **host**: the drive's account is recorded and did not move, and the host shows a stall: the virtual
  drive's server sent a reply late enough to account for the throughput lost (its own record of its
  lateness: a second that lost a fraction f of its level needs a reply f x 1 s late, and at least
  LATE_MS), the virtual drive had nothing in flight long enough to account for it (its own record of
  the time it was starved of requests around that second, STARVED_WINDOW_MS: f x 1 s, and at least
  LATE_MS: fio, not scheduled, sent nothing), fio's I/O count fell with its own latency flat (fio
  issued less, the drive was no slower),
  or the throughput was back at its level within RECOVER_S seconds (a drive whose account did not move
  does not throttle and recover unseen). The plant's lateness is no such evidence: a late plant
  publishes the drive's figures late, which delays a throttle but takes no throughput away (it counts
  in the run's lag, analysis.lag);
- **cache**: the drive's account is recorded and did not move, and the host kept pace: the drive slowed
  on its own (across chassis conditions, analysis.drop_cause tells the SLC cache by the bytes written);
- **unclear**: the drive's account is not recorded (a file or a device without a smart-log); fio's flat
  latency, the simulator's lateness and the virtual drive's starved time still call a stall the host's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from thermrig.analysis.trace import Trace

DRIVE_WINDOW_MS = (-3000, 2000)  # the drive's state changes just before its throughput falls
ACCOUNT = ("power_state", "tmt1_count", "tmt2_count", "tmt1_time_s", "tmt2_time_s", "ocp_throttle_events")
WRITTEN_UNITS = "data_units_written"  # drive_smart: the drive's own count of writes (nvme smart-log) ...
WRITTEN_UNIT_BYTES = 512_000  # ... in units of 1000 x 512 bytes (the NVMe spec)
LATENESS = ("sim_plant_late_ms", "sim_drive_late_ms")  # drive_smart, the virtual drive's only
STALLS = ("sim_drive_late_ms",)  # the lateness that takes throughput away: nbdkit's replies
STARVED = "sim_drive_starved_ms"  # drive_smart, the virtual drive's only: time it had nothing in flight
STARVED_WINDOW_MS = (0, 2000)  # the samples that count second i's: once a second, the next two after it
LATE_MS = 100.0  # the least reply lateness that calls a fall the host's
RECOVER_S = 10  # back at the level within this many seconds, the drive's account unmoved: the host
LEVEL_S = 3  # seconds whose median says the level is back
LATENCY_FLAT = 1.25  # fio's mean latency within this factor of the level's: the drive was no slower
CAUSES = ("thermal", "cache", "host", "unclear")


def account_moves(counters: dict[str, Trace], names: Sequence[str], at_ms: int) -> tuple[str, ...]:
    """Which of the named counters of the drive's account moved around at_ms (DRIVE_WINDOW_MS), each as
    "power_state 0->1" or "tmt1_count +1"."""
    lo, hi = at_ms + DRIVE_WINDOW_MS[0], at_ms + DRIVE_WINDOW_MS[1]
    out: list[str] = []
    for name in names:
        trace = counters.get(name)
        if trace is None or len(trace.values) < 2:
            continue
        before = trace.between(lo - 2000, lo).values
        during = trace.between(lo, hi).values
        if len(during) == 0:
            continue
        start = float(before[-1]) if len(before) else float(during[0])
        end = float(during[-1])
        if end != start:
            change = f"{start:g}->{end:g}" if name == "power_state" else f"+{end - start:g}"
            out.append(f"{name} {change}")
    return tuple(out)


@dataclass(frozen=True)
class Cause:
    cause: str  # one of CAUSES
    why: str


@dataclass(frozen=True)
class Evidence:
    """What a run offers to attribute its measured job's falls: the drive's account and the host's
    lateness (drive_smart traces, Unix ms), and fio's own per-second mean latency (ns; empty: unknown)."""

    counters: dict[str, Trace] = field(default_factory=dict)
    start_ms: int | None = None  # when the measured job's series starts (its index 0's start)
    latency_ns: Sequence[float] = ()

    @property
    def drive_known(self) -> bool:
        return any(name in self.counters for name in ACCOUNT)

    def at_ms(self, i: int) -> int | None:
        return None if self.start_ms is None else self.start_ms + i * 1000

    def drive_events(self, at_ms: int) -> tuple[str, ...]:
        """The drive's account moving around at_ms: "power_state 0->1", "tmt1_count +1"."""
        return account_moves(self.counters, ACCOUNT, at_ms)

    def power_state(self, at_ms: int) -> float:
        """The drive's power state just before at_ms (0 = full speed; 0 when not recorded)."""
        trace = self.counters.get("power_state")
        if trace is None:
            return 0.0
        before = trace.between(at_ms - 3000, at_ms).values
        return float(before[-1]) if len(before) else 0.0

    def plant_lag_ms(self, at_ms: float) -> float | None:
        """How far the plant's time was behind wall time at at_ms (its latest record then; the simulator's
        only: None elsewhere)."""
        trace = self.counters.get("sim_plant_late_ms")
        if trace is None:
            return None
        before = trace.between(-float("inf"), at_ms).values
        return float(before[-1]) if len(before) else 0.0

    def late_ms(self, at_ms: int) -> tuple[str, float]:
        """The latest reply of the virtual drive's server around at_ms: (whose, ms); ("", 0) when none."""
        lo, hi = at_ms + DRIVE_WINDOW_MS[0], at_ms + DRIVE_WINDOW_MS[1]
        worst = ("", 0.0)
        for name in STALLS:
            trace = self.counters.get(name)
            if trace is None:
                continue
            values = trace.between(lo, hi).values
            if len(values) and float(values.max()) > worst[1]:
                worst = (name, float(values.max()))
        return worst

    def starved_ms(self, at_ms: int) -> float:
        """How long the virtual drive had nothing in flight around the second starting at at_ms: its
        samples of sim_drive_starved_ms within STARVED_WINDOW_MS, summed (each counts the time since the
        one before; a gap is counted when the request that ends it arrives). 0 where not recorded."""
        trace = self.counters.get(STARVED)
        if trace is None:
            return 0.0
        lo, hi = at_ms + STARVED_WINDOW_MS[0], at_ms + STARVED_WINDOW_MS[1]
        return float(trace.between(lo, hi).values.sum())


def latency_flat(latency_ns: Sequence[float], i: int, seconds: int = LEVEL_S) -> bool:
    """fio's mean latency in second i within LATENCY_FLAT of the seconds before it."""
    if i < seconds or i >= len(latency_ns):
        return False
    before = [v for v in latency_ns[i - seconds : i] if v > 0]
    return bool(before) and 0 < latency_ns[i] <= LATENCY_FLAT * statistics.median(before)


def recovered(series: Sequence[float], i: int, level: float, line: float, within: int = RECOVER_S) -> bool:
    """The throughput back at or above `line` (a median of LEVEL_S seconds) within `within` seconds of i."""
    for j in range(i + 1, min(len(series) - LEVEL_S + 1, i + 1 + within)):
        if statistics.median(series[j : j + LEVEL_S]) >= line:
            return True
    return False


def attribute(series: Sequence[float], i: int, level: float, evidence: Evidence, drop: float = 0.10) -> Cause:
    """The cause of the fall at series index i from `level` (below (1 - drop) x level)."""
    at = evidence.at_ms(i)
    events = evidence.drive_events(at) if at is not None else ()
    if events:
        return Cause("thermal", ", ".join(events))
    if at is not None and (state := evidence.power_state(at)) > 0:
        return Cause("thermal", f"in power_state {state:g}")
    whose, late = evidence.late_ms(at) if at is not None else ("", 0.0)
    line = (1 - drop) * level
    lost = max(0.0, 1.0 - series[i] / level) if level > 0 else 0.0  # the fraction of the level the second lost
    starved = evidence.starved_ms(at) if at is not None else 0.0
    if late >= max(LATE_MS, 1000.0 * lost):
        host = f"{whose.removeprefix('sim_').removesuffix('_late_ms')} {late:.0f} ms late"
    elif starved >= max(LATE_MS, 1000.0 * lost):
        host = f"the drive had nothing in flight for {starved:.0f} ms"
    elif latency_flat(evidence.latency_ns, i):
        host = "fio's I/O count fell with its latency flat"
    elif evidence.drive_known and recovered(series, i, level, line):
        host = f"back at the level within {RECOVER_S} s"
    else:
        host = ""
    if host:
        unmoved = "the drive's account unmoved" if evidence.drive_known else "the drive's account not recorded"
        return Cause("host", f"{host}; {unmoved}")
    if evidence.drive_known:
        return Cause("cache", "the drive's account unmoved and the host kept pace")
    return Cause("unclear", "the drive's power state and TMT counters are not recorded")


def stall_judge(series: Sequence[float], evidence: Evidence, drop: float = 0.10) -> Callable[[int, float], bool]:
    """Is the fall at series index i, from the level given, a stall of the host (analysis.throttle's
    StallJudge: the onset rule and find_falls pass over what it calls the host's)?"""

    def stall(i: int, level: float) -> bool:
        return attribute(series, i, level, evidence, drop).cause == "host"

    return stall
