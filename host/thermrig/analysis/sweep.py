"""Mixed-sweep curves (seed 000): throughput against the share of reads, one point per job of the
sweep. The read share is measured, the bytes each direction moved, not taken from the job's name."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.analysis.throttle_summary import JobLog


@dataclass(frozen=True)
class SweepPoint:
    position: int
    read_share_pct: float  # 100 x read bytes / all bytes the job moved
    throughput_bps: float  # mean of read + write per second, at the drive's scale
    seconds: int


def sweep_curve(logs: list[JobLog], scale: float = 1.0) -> list[SweepPoint]:
    """One point per job that moved data; empty unless the workload has several jobs and at least one
    of them both reads and writes (a sweep, not a fill followed by a write)."""
    by_job: dict[int, list[JobLog]] = {}
    for log in logs:
        by_job.setdefault(log.position, []).append(log)
    mixed = any({"read", "write"} <= {log.direction for log in job} for job in by_job.values())
    if len(by_job) < 2 or not mixed:
        return []
    points = []
    for position, job in sorted(by_job.items()):
        read = sum(sum(log.values) for log in job if log.direction == "read")
        total = sum(sum(log.values) for log in job if log.direction in ("read", "write"))
        seconds = max((len(log.values) for log in job), default=0)
        if total <= 0 or seconds == 0:
            continue
        points.append(SweepPoint(position, 100.0 * read / total, total / seconds / scale, seconds))
    return points
