"""`thermrig throttle`'s rows: each run's throttle onset and depth read back from InfluxDB
(analysis.throttle_table), and the runs whose points still wait in a spool, marked, never left out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thermrig.analysis.throttle_table import ThrottleRow, throttle_table
from thermrig.campaign.rundir import unsent_runs
from thermrig.db.influx_settings import InfluxSettings


@dataclass(frozen=True)
class CampaignThrottle:
    rows: list[ThrottleRow]
    unsent: frozenset[str]  # runs whose points are not all in InfluxDB (rows without figures where none are)


def _unsent_row(run: str, manifest: dict[str, Any]) -> ThrottleRow:
    """A run with no fio data in InfluxDB yet: its factors from the manifest, no figures."""
    f = manifest.get("factors", {})
    workload = manifest.get("workload", {}).get("name", "-")
    model = manifest.get("drive", {}).get("model", "-")
    return ThrottleRow(
        run, f.get("slot", "-"), f.get("heatsink", "-"), f.get("profile", "-"), workload, model, 0, None, None, None
    )


def campaign_throttle(settings: InfluxSettings, campaign: str, runs_from: Path | None = None) -> CampaignThrottle:
    """The campaign's rows; runs_from: only the runs of that campaign folder."""
    rows = throttle_table(settings, campaign)
    unsent = unsent_runs(campaign)
    if runs_from is not None:
        mine = {p.parent.name for p in runs_from.glob("*/manifest.json")}
        rows = [r for r in rows if r.run in mine]
        unsent = {run: m for run, m in unsent.items() if run in mine}
    rows += [_unsent_row(run, m) for run, m in unsent.items() if run not in {r.run for r in rows}]
    return CampaignThrottle(rows, frozenset(unsent))
