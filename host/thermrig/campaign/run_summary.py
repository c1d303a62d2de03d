"""A run's summary: the throttle onset and depth of the workload's measured job (the one throttle summary,
analysis.throttle_summary) and the workload kind's own figures, bandwidth and IOPS at the drive's scale.
It says complete=false, analysed=false until the analysis completes it once the run's points are all in
InfluxDB (campaign.summaries)."""

from __future__ import annotations

from typing import Any

from thermrig.analysis.throttle_summary import logs_from_fio, throttle_summary
from thermrig.fio.kinds import WorkloadRun


def run_summary(ran: WorkloadRun, scale: float) -> dict[str, Any]:
    """scale: wire bytes per drive byte (the virtual drive's; 1 for a real drive)."""
    fields = throttle_summary(logs_from_fio(ran.result.bw), scale).fields(scale)
    return {**ran.figures, **fields, "complete": False, "analysed": False}
