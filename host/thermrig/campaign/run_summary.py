"""A run's summary: the throttle onset and depth of the workload's measured job (the one throttle summary,
analysis.throttle_summary) and the workload kind's own figures, bandwidth and IOPS at the drive's scale.
It says complete=false, analysed=false until the analysis completes it once the run's points are all in
InfluxDB (campaign.summaries)."""

from __future__ import annotations

import time
from typing import Any

from thermrig.analysis.job_summaries import job_summaries
from thermrig.analysis.throttle_summary import logs_from_fio, throttle_summary
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags, job_summary_line
from thermrig.fio.workload_run import WorkloadRun


def run_summary(ran: WorkloadRun, scale: float) -> dict[str, Any]:
    """scale: wire bytes per drive byte (the virtual drive's; 1 for a real drive)."""
    fields = throttle_summary(logs_from_fio(ran.result.bw, ran.result.iops, ran.result.lat), scale).fields(scale)
    return {**ran.figures, **fields, "complete": False, "analysed": False}


def lab_job_results(ran: WorkloadRun, scale: float, tags: RunTags, recorder: Recorder) -> dict[str, dict]:
    """A lab's fio file: each job's summary, recorded as a job_summary point (tag job) and returned for
    the manifest."""
    result, names = ran.logs[-1]
    per_job = job_summaries(logs_from_fio(result.bw), names, scale)
    now = time.time_ns()
    recorder.append([job_summary_line(name, fields, now, tags) for name, fields in per_job.items()])
    return per_job
