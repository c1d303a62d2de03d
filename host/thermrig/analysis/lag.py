"""One time in the simulated world (docs/analysis.md, "One time"): how far the plant, the virtual drive
and fio drifted apart during a run's workload, worst of

- the plant: how far behind wall time its latest tick was served (drive_smart `sim_plant_late_ms`);
- the virtual drive: how much later than the drive's own timeline nbdkit's latest reply went out
  (drive_smart `sim_drive_late_ms`);
- fio: how much longer than its 1 s window a window of its per-second log ran (fio stamps a window when
  it gets to it: a starved fio stamps late).

BOUND_MS is the bound they are kept within: half of the 1 s the analysis reads throughput and
temperatures at, so a second's throughput stays in its own second. A run past it is marked."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from thermrig.analysis.attribution import LATENESS
from thermrig.analysis.run_data import RunData
from thermrig.analysis.throttle_summary import JobLog, measured_job

BOUND_MS = 500.0
WINDOW_MS = 1000  # fio's log_avg_msec


@dataclass(frozen=True)
class Lag:
    worst_ms: float
    source: str  # plant, drive or fio: whose lag was the worst ("" when none was measured)

    @property
    def over_bound(self) -> bool:
        return self.worst_ms > BOUND_MS

    def fields(self) -> dict[str, float | str | bool]:
        return {"lag_ms": float(self.worst_ms), "lag_source": self.source, "lag_over_bound": self.over_bound}

    def describe(self) -> str:
        mark = f", past the {BOUND_MS:.0f} ms bound" if self.over_bound else ""
        return f"worst lag {self.worst_ms:.0f} ms ({self.source}){mark}"


def fio_lag_ms(logs: list[JobLog]) -> float:
    """The longest a window of fio's per-second log ran past its 1 s (0 when every one was on time)."""
    worst = 0.0
    for log in logs:
        if len(log.stamps_ms) >= 2:
            worst = max(worst, float(np.diff(np.asarray(log.stamps_ms, dtype=float)).max()) - WINDOW_MS)
    return max(0.0, worst)


def run_lag(data: RunData) -> Lag | None:
    """The worst lag of the run's workload; None when nothing of it was measured (no fio log, no
    simulator's record)."""
    window = data.workload_window()
    worst: list[tuple[float, str]] = []
    job = measured_job(data.jobs)
    if any(len(log.stamps_ms) >= 2 for log in job):
        worst.append((fio_lag_ms(job), "fio"))
    for name in LATENESS:
        trace = data.counters.get(name)
        if trace is None:
            continue
        if window is not None:
            trace = trace.between(*window)
        if len(trace.values):
            worst.append((float(trace.values.max()), name.removeprefix("sim_").removesuffix("_late_ms")))
    if not worst:
        return None
    ms, source = max(worst)
    return Lag(ms, source)
