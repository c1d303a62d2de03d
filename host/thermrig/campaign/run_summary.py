"""A run's summary: the throttle onset and depth from fio's per-second bandwidth log (analysis.throttle)
and the workload kind's own figures, bandwidth and IOPS at the drive's scale."""

from __future__ import annotations

from typing import Any

from thermrig.analysis.throttle import TAIL_S, per_second, throttle_of
from thermrig.fio.kinds import WorkloadRun
from thermrig.fio.runner import LogPoint


def run_summary(ran: WorkloadRun, scale: float) -> dict[str, Any]:
    """scale: wire bytes per drive byte (the virtual drive's; 1 for a real drive)."""
    return {**ran.figures, **throttle_summary(ran.result.bw, scale)}


def throttle_summary(bw: list[LogPoint], scale: float) -> dict[str, Any]:
    """Onset and depth from the last job's per-second log (the timed job after a fill)."""
    last = max((p.job for p in bw), default=1)
    points = [p for p in bw if p.job == last]
    series = per_second([p.timestamp_ms for p in points], [p.value * 1024.0 for p in points])
    out: dict[str, Any] = {"seconds": len(series), "bw_scale": scale}
    if len(series) >= TAIL_S + 5 and series[1:4] and min(series[1:4]) > 0:  # a plateau to measure from
        th = throttle_of(series)
        out.update(plateau_bw_bps=th.plateau / scale, depth_pct=th.depth_pct, throttled=th.onset_s is not None)
        if th.onset_s is not None:
            out["onset_s"] = th.onset_s
    return out
