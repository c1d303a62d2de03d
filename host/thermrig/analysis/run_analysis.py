"""Everything a run summary holds, from one run's data (docs/analysis.md): the throttle summary,
every sensor at onset, time above each threshold, recovery after the workload, the drive's own
thermal-management counters, consistency and the mixed-sweep curve."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from thermrig.analysis.consistency import consistency_score
from thermrig.analysis.drive_state import DriveState, drive_state
from thermrig.analysis.lag import Lag, run_lag
from thermrig.analysis.run_data import CONTROLLER, RunData, Trace
from thermrig.analysis.sweep import SweepPoint, sweep_curve
from thermrig.analysis.throttle_summary import ThrottleSummary, job_series, measured_job, throttle_summary

THRESHOLDS_C = (60.0, 70.0, 80.0)
# Back within this of the baseline: recovered. The campaign's cool-down (1 C by default) is judged on the
# 10 Hz frames and ends the run there; the 1 s means of its last second sit just above it.
RECOVERY_MARGIN_C = 2.0
CONSISTENCY_WINDOW_S = 400  # AnandTech scores the last 400 s


@dataclass(frozen=True)
class RunSummary:
    run: str
    tags: dict[str, str]
    status: str | None
    throttle: ThrottleSummary
    at_onset_c: dict[str, float]  # sensor key -> its temperature at the onset (only sensors reporting then)
    above_s: dict[str, dict[float, float]]  # sensor key -> threshold -> seconds at or above it
    peak_c: dict[str, float]
    baseline_ctrl_c: float | None
    recovery_s: float | None  # after the workload: controller back within the margin of its baseline
    drive: DriveState
    scale: float = 1.0  # wire bytes per drive byte (the virtual drive): plateau and IOPS are at drive scale
    iops_average: float | None = None
    iops_consistency: float | None = None
    sweep: list[SweepPoint] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # what this run lacks, in words
    lag: Lag | None = None  # the simulated world's worst lag in the workload (analysis.lag); None: unmeasured

    @property
    def complete(self) -> bool:
        return not self.missing and self.status in (None, "ok")


def seconds_at_or_above(trace: Trace, threshold: float) -> float:
    """Time at or above the threshold, each sample counting until the next one (the last counts 1 s)."""
    if len(trace.t_ms) == 0:
        return 0.0
    dt = np.diff(trace.t_ms, append=trace.t_ms[-1] + 1000.0) / 1000.0
    return float(dt[trace.values >= threshold].sum())


def recovery_after(ctrl: Trace, baseline_c: float, from_ms: int, margin_c: float = RECOVERY_MARGIN_C) -> float | None:
    """Seconds from from_ms until the controller is first back within margin_c of its baseline."""
    after = ctrl.between(from_ms, float("inf"))
    back = np.nonzero(after.values <= baseline_c + margin_c)[0]
    return None if len(back) == 0 else float((after.t_ms[back[0]] - from_ms) / 1000.0)


def analyse_run(data: RunData, thresholds: tuple[float, ...] = THRESHOLDS_C) -> RunSummary:
    missing: list[str] = []
    th = throttle_summary(data.jobs, data.scale, counters=data.counters)
    if th.note:
        missing.append(th.note)
    if data.status not in (None, "ok"):
        missing.append(f"the run ended {data.status}")
    if not data.temps:
        missing.append("no rig temperatures")
    origin = data.phases.get("workload", th.start_ms)
    missing += [gap.describe(origin) for gap in data.workload_gaps()]
    start = th.start_ms if th.start_ms is not None else data.phases.get("workload")
    end = data.end_ms
    at_onset: dict[str, float] = {}
    if (moment := th.onset_at_s) is not None and th.start_ms is not None:
        for key, trace in data.temps.items():
            value = trace.at(th.start_ms + moment * 1000.0)
            if value is not None:
                at_onset[key] = value
    above: dict[str, dict[float, float]] = {}
    peak: dict[str, float] = {}
    for key, trace in data.temps.items():
        window = trace.between(start, end if end is not None else float("inf")) if start is not None else trace
        above[key] = {t: seconds_at_or_above(window, t) for t in thresholds}
        if len(window.values):
            peak[key] = float(window.values.max())
    baseline = recovery = None
    ctrl = data.temps.get(CONTROLLER)
    if ctrl is not None and "baseline" in data.phases and "workload" in data.phases:
        base = ctrl.between(data.phases["baseline"], data.phases["workload"])
        # a baseline shorter than a second (a fast simulation) holds no 1 s mean: the value as it ended
        baseline = float(base.values.mean()) if len(base.values) else ctrl.at(data.phases["workload"])
    if ctrl is not None and baseline is not None and "cooldown" in data.phases:
        recovery = recovery_after(ctrl, baseline, data.phases["cooldown"])
    summary = RunSummary(
        run=data.run,
        tags=data.tags,
        status=data.status,
        throttle=th,
        at_onset_c=at_onset,
        above_s=above,
        peak_c=peak,
        baseline_ctrl_c=baseline,
        recovery_s=recovery,
        drive=drive_state(data.counters),
        scale=data.scale,
        sweep=sweep_curve(data.jobs, data.scale),
        missing=missing,
        lag=run_lag(data),
    )
    _, iops = job_series(measured_job(data.jobs), iops=True)
    if len(iops) >= 2:
        score = consistency_score([v / data.scale for v in iops], CONSISTENCY_WINDOW_S)
        if math.isfinite(score.consistency):  # a constant series has no spread to score
            summary = replace(summary, iops_average=score.average, iops_consistency=score.consistency)
    return summary
