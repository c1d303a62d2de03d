"""A campaign's summaries (docs/analysis.md): each run's full summary as soon as its points are all in
InfluxDB, the campaign's cells, effects and sensor ranking at its end and again whenever a late run's
summary completes.

A run whose points were still spooled when it ended, or whose summary could not be read back (the query's
error is kept and said: a read token that may not read, InfluxQL finding no database on 2.x), keeps the
campaign runner's summary (complete=false, analysed=false) and says so in its manifest (`analysed:
false`). Whoever next finds its spool empty and the server readable (the campaign at its end, `thermrig db
drain`, `thermrig analyze`) analyses it then."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thermrig.analysis.summary_store import store_campaign, store_run
from thermrig.campaign.rundir import read_manifest, unsent_runs, write_manifest
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import QueryError
from thermrig.db.spool import Spool, spool_folders


@dataclass(frozen=True)
class Readback:
    """Whether summaries were read back from InfluxDB and written; if not, the query's own error (a server
    gone, a token that may not read, InfluxQL finding no database), which says what to fix."""

    error: str = ""

    def __bool__(self) -> bool:
        return not self.error


def analyse_run(settings: InfluxSettings, run_dir: Path, manifest: dict[str, Any]) -> Readback:
    """The run's full summary into InfluxDB, and its manifest marked analysed; if InfluxDB failed, the
    error (the manifest then keeps analysed false for the next try)."""
    try:
        store_run(settings, str(manifest["campaign"]), run_dir.name)
    except QueryError as exc:
        return Readback(str(exc) or type(exc).__name__)
    manifest["analysed"] = True
    write_manifest(run_dir, manifest)
    return Readback()


def analyse_campaign(settings: InfluxSettings, campaign: str) -> Readback:
    """The campaign's results (campaign_summary, campaign_effect, sensor_rank) from the runs whose points
    are all in InfluxDB; if InfluxDB failed, the error."""
    try:
        store_campaign(settings, campaign, pending=set(unsent_runs(campaign)))
    except QueryError as exc:
        return Readback(str(exc) or type(exc).__name__)
    return Readback()


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


@dataclass
class Completed:
    """What completing the late summaries did: the runs completed, and the error of those that still
    cannot be read back (their points all in InfluxDB)."""

    runs: list[str]
    failed: list[str]
    error: str = ""


def complete_late(settings: InfluxSettings, campaign: str | None = None) -> Completed:
    """Analyse every awaiting run whose spool is now empty, then its campaign again."""
    done = Completed([], [])
    campaigns: set[str] = set()
    for waiting in awaiting_analysis(campaign):
        if waiting.spooled:
            continue
        readback = analyse_run(settings, waiting.run_dir, waiting.manifest)
        if readback:
            done.runs.append(waiting.run)
            campaigns.add(str(waiting.manifest["campaign"]))
        else:
            done.failed.append(waiting.run)
            done.error = readback.error
    for name in sorted(campaigns):
        readback = analyse_campaign(settings, name)
        done.error = done.error or readback.error
    return done
