"""Write a campaign's report into a folder: report.html (self-contained), the PNG figures, and every
table as CSV and JSON. Everything is read from InfluxDB."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from thermrig.analysis.summary_store import CampaignAnalysis, analyse_campaign
from thermrig.db.influx_settings import InfluxSettings
from thermrig.report import plots
from thermrig.report.experiment_tables import experiment_tables
from thermrig.report.html import page
from thermrig.report.tables import all_tables


@dataclass(frozen=True)
class Report:
    html: Path
    files: list[Path]  # every file written, the HTML included
    missing: list[str]  # what the data lacks, as the report states it


def missing_of(a: CampaignAnalysis, skipped: list[str]) -> list[str]:
    out = [f"run {s.run}: {'; '.join(s.missing)}" for s in a.summaries if s.missing]
    out += [f"sensor {sensor}: reported at no throttle onset" for sensor in a.silent]
    if not any(s.throttle.onset_s is not None for s in a.summaries):
        out.append("no run throttled: no sensor ranking")
    out += [f"no data for the figure: {title}" for title in skipped]
    return out


def write_report(settings: InfluxSettings, campaign: str, out: Path, pending: Collection[str] = ()) -> Report:
    """pending: runs whose points still wait in a spool (marked, and left out of the campaign's results)."""
    a = analyse_campaign(settings, campaign, pending=pending)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    tables = all_tables(a) + experiment_tables(a)
    for t in tables:
        files += t.write(out)
    figures, skipped = [], []
    for name, (title, draw) in plots.FIGURES.items():
        png = draw(a, out / name)
        if png is None:
            (out / name).unlink(missing_ok=True)
            if name not in ("steady_state.png", "sweeps.png"):  # only some workloads have rounds or sweeps
                skipped.append(title)
            continue
        figures.append((title, png))
        files.append(png)
    missing = missing_of(a, skipped)
    report = out / "report.html"
    report.write_text(page(campaign, settings.url, tables, figures, missing))
    return Report(report, [report, *files], missing)
