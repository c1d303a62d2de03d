"""The report's tables for the experiments only a controlled rig can run: which throughput
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


def sustainable_rates(a: CampaignAnalysis) -> Table | None:
    """rate_search runs: the sustainable write rate per slot, heatsink and chassis condition."""
    keys = ("slot", "heatsink", "airflow", "profile", "workload")
    rows = []
    for data, _ in a.runs:
        stored = data.stored
        if "sustainable_bps" not in stored:
            continue
        rows.append(
            [
                *(data.tags.get(k, "") for k in keys),
                f"{float(stored['sustainable_bps']) / 1e6:,.0f}",  # type: ignore[arg-type]
                f"{float(stored.get('full_rate_bps') or 0) / 1e6:,.0f}",  # type: ignore[arg-type]
                str(stored.get("search_hold_s", "")),
                str(stored.get("search_steps", "")),
                data.run,
            ]
        )
    if not rows:
        return None
    return Table(
        "sustainable_rates",
        "Sustainable write rate",
        [*keys, "sustainable MB/s", "full MB/s", "held s", "steps", "run"],
        sorted(rows),
        "the highest sequential write rate (fio rate=) that ran the stated time without throttling, by "
        "bisection with equilibrium between steps (docs/campaigns.md, rate_search)",
    )


def experiment_tables(a: CampaignAnalysis) -> list[Table]:
    return [t for t in (drop_causes(a), sustainable_rates(a)) if t is not None]
