"""The report's tables for the experiments only a controlled rig can run (issue 22): which throughput
drop is the SLC cache and which is thermal (analysis/drop_cause.py). A table appears only when its
campaign has something to show."""

from __future__ import annotations

from thermrig.analysis.drop_cause import classify
from thermrig.analysis.summary_store import CampaignAnalysis
from thermrig.report.tables import Table


def drop_causes(a: CampaignAnalysis) -> Table | None:
    drops = classify(data for data, _ in a.runs)
    if not drops:
        return None
    rows = [
        [
            d.run,
            d.condition,
            d.workload,
            str(d.at_s),
            f"{d.written_gb:.1f}",
            f"{d.before_bps / 1e6:,.0f}",
            f"{d.after_bps / 1e6:,.0f}",
            ", ".join(d.drive_events) or "none",
            d.cause,
            d.why,
        ]
        for d in drops
    ]
    columns = ["run", "condition", "workload", "at s", "written GB", "before MB/s", "after MB/s"]
    return Table(
        "drop_causes",
        "Throughput drops: thermal or cache?",
        [*columns, "drive events", "cause", "why"],
        rows,
        "cache: no power-state change and the same bytes written in every chassis condition; thermal: at a "
        "power-state change or TMT step, at bytes no other condition drops at (docs/analysis.md)",
    )


def experiment_tables(a: CampaignAnalysis) -> list[Table]:
    return [t for t in (drop_causes(a),) if t is not None]
