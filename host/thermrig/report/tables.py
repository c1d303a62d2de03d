"""The report's tables as rows of strings (for HTML, CSV and JSON alike): the onset/depth table in the
seeds' form, every run, the sensor ranking, factor effects, consistency and steady state."""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from thermrig.analysis.run_analysis import RunSummary
from thermrig.analysis.summary_store import CampaignAnalysis


@dataclass(frozen=True)
class Table:
    name: str  # file stem: onset_depth -> onset_depth.csv, onset_depth.json
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""

    def write(self, folder: Path) -> list[Path]:
        csv_path, json_path = folder / f"{self.name}.csv", folder / f"{self.name}.json"
        with csv_path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(self.columns)
            w.writerows(self.rows)
        records = [dict(zip(self.columns, row, strict=True)) for row in self.rows]
        json_path.write_text(json.dumps({"title": self.title, "note": self.note, "rows": records}, indent=2) + "\n")
        return [csv_path, json_path]


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def onset_depth(a: CampaignAnalysis) -> Table:
    """Rows slot, columns chassis condition (profile), cells "-40 % after 55 s" (mean over the cell's runs)."""
    slots = sorted({s.tags.get("slot", "-") for s in a.summaries})
    profiles = sorted({s.tags.get("profile", "-") for s in a.summaries})
    rows = []
    for slot in slots:
        row = [slot]
        for profile in profiles:
            runs = [s for s in a.summaries if s.tags.get("slot", "-") == slot and s.tags.get("profile", "-") == profile]
            depths = [s.throttle.depth_pct for s in runs if s.throttle.depth_pct is not None]
            onsets = [s.throttle.onset_s for s in runs if s.throttle.onset_s is not None]
            if not runs:
                row.append("")
            elif not depths:
                row.append("no data")
            elif not onsets:
                row.append(f"no throttle ({statistics.mean(depths):+.0f} %)")
            else:
                n = f" (n={len(runs)})" if len(runs) > 1 else ""
                # the seeds' "-40 % after 55 s"; a run that got faster again by its end reads "+1 %"
                row.append(f"{-statistics.mean(depths):+.0f} % after {statistics.mean(onsets):.0f} s{n}")
        rows.append(row)
    return Table(
        "onset_depth",
        "Throttle onset and depth (rows: slot, columns: chassis condition)",
        ["slot", *profiles],
        rows,
        "depth: throughput lost by the last 30 s against the initial plateau; onset: seconds until it left it",
    )


def _marks(s: RunSummary) -> list[str]:
    """What the data column says of a run: what it lacks, its host stalls, a lag past the bound."""
    marks = [] if s.complete else list(s.missing)
    if s.throttle.host_stalls:
        marks.append(s.throttle.describe_stalls())
    if s.lag is not None and s.lag.over_bound:
        marks.append(s.lag.describe())
    return marks


def runs(a: CampaignAnalysis) -> Table:
    rows = []
    for order, s in enumerate(a.summaries, start=1):
        ctrl = next((v for k, v in s.at_onset_c.items() if k.endswith("drive_ctrl_c")), None)
        rows.append(
            [
                str(order),
                s.run,
                *(s.tags.get(k, "-") for k in ("slot", "heatsink", "profile", "workload")),
                str(s.throttle.seconds),
                _num(s.throttle.plateau_bps and s.throttle.plateau_bps / 1e6, ",.0f"),
                _num(s.throttle.onset_s, ".0f"),
                s.throttle.onset_cause or "-",
                _num(s.throttle.depth_pct, ".1f"),
                _num(ctrl, ".1f"),
                _num(s.recovery_s, ".0f"),
                _num(s.drive.tmt.get("tmt1_count"), ".0f"),
                "; ".join(_marks(s)) or "complete",
            ]
        )
    columns = ["order", "run", "slot", "heatsink", "profile", "workload", "seconds", "plateau MB/s", "onset s"]
    columns += ["onset cause", "depth %", "controller at onset °C", "recovery s", "TMT1 transitions", "data"]
    return Table("runs", "Every run, in the order it ran", columns, rows)


def ranking(a: CampaignAnalysis) -> Table:
    rows = [
        [
            str(i),
            r.label,
            str(r.runs),
            f"{r.median_c:.1f}",
            f"{r.spread_c:.2f}",
            f"{r.mad_c:.2f}",
            _num(r.sd_c, ".2f"),
            f"{r.rise_c:.1f}",
            "yes" if r.follows else "no",
            _num(r.error_s, ".1f"),
            str(r.missed),
        ]
        for i, r in enumerate(a.ranking, start=1)
    ]
    rows += [["-", label, "0", "-", "-", "-", "-", "-", "-", "-", "-"] for label in a.silent]
    columns = ["rank", "sensor", "runs", "at onset °C (median)", "spread °C", "MAD °C", "sd °C", "rise °C"]
    columns += ["follows the drive", "timing error s", "missed"]
    return Table("sensor_ranking", "Which sensor predicts throttling", columns, rows, "docs/analysis.md")


def effects(a: CampaignAnalysis) -> Table:
    rows = [
        [
            e.metric,
            e.factor,
            f"{e.level} - {e.reference}",
            f"{e.n} / {e.n_reference}",
            f"{e.difference:+.3g}",
            "needs replicates" if e.ci_low is None or e.ci_high is None else f"[{e.ci_low:+.3g}, {e.ci_high:+.3g}]",
            _num(e.order_r, "+.2f"),
        ]
        for e in a.effects
    ]
    columns = ["metric", "factor", "levels", "runs", "difference of means", "95 % CI (Welch)", "r with run order"]
    notes = sorted({e.note for e in a.effects if e.note})
    return Table("effects", "Factor effects", columns, rows, "; ".join(notes))


def consistency(a: CampaignAnalysis) -> Table:
    rows = []
    for data, s in a.runs:
        stored = data.stored
        rows.append(
            [
                s.run,
                _num(s.iops_average, ",.0f"),
                _num(s.iops_consistency, ".1f"),
                str(stored.get("rounds", "-")),
                {True: "yes", False: "no"}.get(stored.get("steady"), "-"),  # type: ignore[call-overload]
                _num(stored.get("steady_iops"), ",.0f"),  # type: ignore[arg-type]
            ]
        )
    columns = ["run", "IOPS average (last 400 s)", "consistency (avg / sd)", "SNIA rounds", "steady", "steady IOPS"]
    return Table("consistency", "Consistency and SNIA steady state", columns, rows)


def all_tables(a: CampaignAnalysis) -> list[Table]:
    return [onset_depth(a), runs(a), ranking(a), effects(a), consistency(a)]
