"""One throttle summary per job of a workload (a lab's multi-job fio file: one result per job), by the
same rule as the run's (analysis.throttle_summary) applied to each job's own per-second log."""

from __future__ import annotations

from collections.abc import Iterable

from thermrig.analysis.throttle_summary import JobLog, throttle_summary


def job_summaries(logs: Iterable[JobLog], names: dict[int, str], scale: float = 1.0) -> dict[str, dict]:
    """name -> the job's run_summary fields (onset, depth, plateau, seconds) and its mean bandwidth at
    the drive's scale; a job without a bandwidth log gets only its seconds (0)."""
    by_position: dict[int, list[JobLog]] = {}
    for log in logs:
        by_position.setdefault(log.position, []).append(log)
    out: dict[str, dict] = {}
    for position, name in sorted(names.items()):
        job = by_position.get(position, [])
        fields: dict = dict(throttle_summary(job, scale).fields(scale))
        values = [v for log in job for v in log.values]
        if values:
            fields["mean_bw_bps"] = sum(values) / len({s for log in job for s in log.stamps_ms}) / scale
        out[name] = fields
    return out
