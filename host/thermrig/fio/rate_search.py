"""The sustainable write rate (workload kind "rate_search"): the highest sequential write rate (fio's
`rate=`) the drive holds for `runtime_s` without throttling, by bisection, the rig back at thermal
equilibrium before every step.

Step 1 writes unlimited: its rate over PLATEAU_S seconds after the first is the drive's full rate, the
top of the search (if it does not throttle within the time, that full rate is sustainable and the
search ends). Where the drive counts its own work (the virtual drive: thermrig.dut.drive.WorkDone) that
rate is the bytes it wrote over PLATEAU_S seconds of the time it was fed, so a host that left it
starved (fio not scheduled on a busy machine) does not lower the top; elsewhere it is the median of
fio's seconds. Each next step writes at the middle of the interval still open: a step that holds its
rate (no two seconds in a row below THROTTLED of it) raises the bottom, one that does not lowers the
top. The result is the highest rate that held (0 when none did)."""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from thermrig.analysis.throttle import per_second
from thermrig.dut.drive import DriveUnderTest, WorkDone
from thermrig.fio.runner import FioResult, LiveSample, run_fio
from thermrig.fio.workload_setup import WorkloadSetup
from thermrig.fio.workloads import ResolvedWorkload, Workload, WorkloadKind, job_file

THROTTLED = 0.9  # a step throttled: two seconds in a row below 90 % of its rate
PLATEAU_S = 3  # seconds after the first that set step 1's full rate


@dataclass
class Step:
    rate_bps: float | None  # at the drive's scale; None: unlimited
    held: bool
    measured_bps: float  # the step's median throughput, at the drive's scale


@dataclass
class SearchResult:
    steps: list[Step] = field(default_factory=list)
    results: list[FioResult] = field(default_factory=list)
    full_bps: float = 0.0  # step 1's plateau: the top of the search

    @property
    def sustainable_bps(self) -> float:
        held = [s.rate_bps if s.rate_bps is not None else self.full_bps for s in self.steps if s.held]
        return max(held, default=0.0)


@dataclass(frozen=True)
class Reading:
    """The drive's own count, read as fio reported a second."""

    wall_s: float  # time.monotonic() at the reading
    done: WorkDone


@dataclass(frozen=True)
class FedRate:
    bps: float  # bytes written over the time fed, at the drive's scale
    fed_s: float
    wall_s: float


def plateau(series: list[float]) -> float:
    """fio's full rate: the median of the PLATEAU_S seconds after the first (partial) one."""
    return statistics.median(series[1 : 1 + PLATEAU_S]) if len(series) > 1 else 0.0


def fed_rate(readings: list[Reading]) -> FedRate | None:
    """The drive's rate while fed, by its own count, from fio's first report of writing over PLATEAU_S
    seconds of the time it was fed (the wall time less the time it was starved; fewer at the step's end,
    at least one): the bytes it wrote over that time. None when it was fed less than a second."""
    if not readings:
        return None
    start = readings[0]

    def fed(r: Reading) -> float:
        return (r.wall_s - start.wall_s) - (r.done.starved_s - start.done.starved_s)

    end = next((r for r in readings if fed(r) >= PLATEAU_S), readings[-1])
    if fed(end) < 1.0:
        return None
    return FedRate((end.done.written - start.done.written) / fed(end), fed(end), end.wall_s - start.wall_s)


def held(series: list[float], rate: float) -> bool:
    """No two seconds in a row below THROTTLED x rate, the first (partial) second left out."""
    low = [v < THROTTLED * rate for v in series[1:]]
    return not any(a and b for a, b in itertools.pairwise(low))


def series_of(result: FioResult) -> list[float]:
    """fio's per-second write throughput (bytes/s, on the wire), its jobs summed."""
    stamps = sorted({p.timestamp_ms for p in result.bw})
    by_stamp: dict[int, float] = {}
    for p in result.bw:
        by_stamp[p.timestamp_ms] = by_stamp.get(p.timestamp_ms, 0.0) + p.value * 1024.0
    return per_second(stamps, [by_stamp[s] for s in stamps]) if stamps else []


def _reading(
    target: DriveUnderTest, on_live: Callable[[LiveSample], None], into: list[Reading]
) -> Callable[[LiveSample], None]:
    """on_live, the drive's own count read first as fio reports each second."""

    def live(sample: LiveSample) -> None:
        if (done := target.work_done()) is not None:
            into.append(Reading(time.monotonic(), done))
        on_live(sample)

    return live


def step_job(workload: ResolvedWorkload, target: DriveUnderTest, log_prefix: str, wire_rate: float | None) -> str:
    """A sequential write of runtime_s at the workload's bs and queue depth, at most wire_rate bytes/s."""
    step = Workload(
        workload.name, WorkloadKind.SEQ_WRITE, workload.runtime_s, workload.bs, workload.iodepth, workload.span
    ).resolved()
    text = job_file(step, target, log_prefix)
    return text if wire_rate is None else text.replace("rw=write\n", f"rw=write\nrate={max(1, round(wire_rate))}\n")


def run_rate_search(
    workload: ResolvedWorkload, setup: WorkloadSetup, scale: float, between: Callable[[], None] | None
) -> SearchResult:
    """scale: wire bytes per drive byte; between: brings the rig back to equilibrium before a step."""
    target, folder, on_live, stop, on_note = setup.target, setup.folder, setup.on_live, setup.stop, setup.on_note
    out = SearchResult()
    lo, hi = 0.0, 0.0
    for n in range(1, workload.max_rounds + 1):
        if n > 1 and between is not None:
            on_note(f"step {n}: equilibrium")
            between()
        rate = None if n == 1 else (lo + hi) / 2
        step_dir = folder / f"step-{n:02d}"
        readings: list[Reading] = []
        result = run_fio(
            step_job(workload, target, str(step_dir / "fio"), None if rate is None else rate * scale),
            step_dir,
            on_live if rate is not None else _reading(target, on_live, readings),
            stop,
            target.fio_server,
        )
        out.results.append(result)
        series = [v / scale for v in series_of(result)]
        how = ""
        if rate is None:
            fed = fed_rate(readings)
            hi = out.full_bps = plateau(series) if fed is None else fed.bps
            if fed is not None:
                how = f" (full rate {fed.bps / 1e6:,.0f} MB/s, fed {fed.fed_s:.1f} s of {fed.wall_s:.1f} s)"
            ok = held(series, hi)
        else:
            ok = held(series, rate)
        measured = statistics.median(series[1:]) if len(series) > 1 else 0.0
        out.steps.append(Step(rate, ok, measured))
        on_note(
            f"step {n}: {'unlimited' if rate is None else f'{rate / 1e6:,.0f} MB/s'} "
            f"{'held' if ok else 'throttled'}{how}"
        )
        if stop.is_set() or (n == 1 and ok):
            break
        if rate is not None:
            lo, hi = (rate, hi) if ok else (lo, rate)
    (folder / "rate_search.json").write_text(json.dumps([s.__dict__ for s in out.steps], indent=1))
    return out


def figures(search: SearchResult, workload: ResolvedWorkload) -> dict[str, Any]:
    """The run summary's fields (docs/influx-schema.md)."""
    return {
        "sustainable_bps": float(search.sustainable_bps),
        "search_steps": len(search.steps),
        "search_hold_s": int(workload.runtime_s),
        "full_rate_bps": float(search.full_bps),
    }
