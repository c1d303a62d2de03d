"""A campaign's summaries (docs/analysis.md): each run's full summary as soon as its points are all in
InfluxDB, the campaign's cells, effects and sensor ranking at its end and again whenever a late run's
summary completes.

A run whose points were still spooled when it ended keeps the campaign runner's summary (complete=false,
analysed=false) and says so in its manifest (`analysed: false`). Whoever next finds its spool empty (the
campaign at its end, `thermrig db drain`, or any command that reads the campaign) analyses it then."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thermrig.analysis.summary_store import store_campaign, store_run
from thermrig.campaign.rundir import read_manifest, unsent_runs, write_manifest
from thermrig.db.query import QueryError
from thermrig.db.settings import InfluxSettings
from thermrig.db.spool import Spool, spool_folders


def analyse_run(settings: InfluxSettings, run_dir: Path, manifest: dict[str, Any]) -> bool:
    """The run's full summary into InfluxDB, and its manifest marked analysed; False if InfluxDB failed
    (the manifest then keeps analysed false for the next try)."""
    try:
        store_run(settings, str(manifest["campaign"]), run_dir.name)
    except QueryError:
        return False
    manifest["analysed"] = True
    write_manifest(run_dir, manifest)
    return True


def analyse_campaign(settings: InfluxSettings, campaign: str) -> bool:
    """The campaign's results (campaign_summary, campaign_effect, sensor_rank) from the runs whose points
    are all in InfluxDB; False if InfluxDB failed."""
    try:
        store_campaign(settings, campaign, pending=set(unsent_runs(campaign)))
    except QueryError:
        return False
    return True


@dataclass(frozen=True)
class Waiting:
    run_dir: Path
    manifest: dict[str, Any]

    @property
    def run(self) -> str:
        return self.run_dir.name

    @property
    def spooled(self) -> bool:
        """Some of its points still wait in its spool."""
        return Spool(self.run_dir / f"{self.run}.lp").pending_bytes() > 0


def awaiting_analysis(campaign: str | None = None) -> list[Waiting]:
    """Every run (of the campaign, or of any) that ended ok and whose full summary was never written."""
    found = []
    for folder in spool_folders()[1:]:  # the campaign folders the spools are noted in
        for path in sorted(folder.glob("*/manifest.json")):
            manifest = read_manifest(path.parent)
            if manifest is None or manifest.get("analysed") is not False or manifest.get("status") != "ok":
                continue
            if campaign is None or manifest.get("campaign") == campaign:
                found.append(Waiting(path.parent, manifest))
    return found


def complete_late(settings: InfluxSettings, campaign: str | None = None) -> list[str]:
    """Analyse every awaiting run whose spool is now empty, then its campaign again; the runs completed."""
    done: list[str] = []
    campaigns: set[str] = set()
    for waiting in awaiting_analysis(campaign):
        if waiting.spooled:
            continue
        if analyse_run(settings, waiting.run_dir, waiting.manifest):
            done.append(waiting.run)
            campaigns.add(str(waiting.manifest["campaign"]))
    for name in sorted(campaigns):
        analyse_campaign(settings, name)
    return done
