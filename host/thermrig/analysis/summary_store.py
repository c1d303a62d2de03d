"""Summaries into InfluxDB (docs/influx-schema.md): per run, the run_summary point rewritten at its own
time with every analysis field (fields the campaign runner wrote and the analysis does not compute,
consistency and steady state, stay: InfluxDB merges a point's fields); per campaign, its cells, factor
effects and sensor ranking, stamped at the campaign's last run end so a rewrite replaces them.

A run whose points still wait in a spool (pending) is neither analysed nor counted: its summary is left
as the campaign runner wrote it (complete=false, analysed=false) until its points are all in."""

from __future__ import annotations

import math
import time
from collections.abc import Collection
from dataclasses import dataclass, field, replace

from influxdb_client import InfluxDBClient
from influxdb_client.client.write_api import SYNCHRONOUS

from thermrig.analysis.effects import Cell, Effect, cells, effects
from thermrig.analysis.influx_source import load_campaign
from thermrig.analysis.run_analysis import THRESHOLDS_C, RunSummary, analyse_run
from thermrig.analysis.run_data import FACTORS, LAB_TAGS, RunData
from thermrig.analysis.sensor_ranking import SensorRank, rank_sensors
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import QueryError
from thermrig.db.schema import (
    CAMPAIGN_EFFECT,
    CAMPAIGN_SUMMARY,
    SENSOR_RANK,
    RunTags,
    summary_line,
    tagged_line,
)
from thermrig.db.writer import quiet_retries


@dataclass(frozen=True)
class CampaignAnalysis:
    campaign: str
    runs: list[tuple[RunData, RunSummary]]
    cells: list[Cell]
    effects: list[Effect]
    ranking: list[SensorRank]
    silent: list[str]  # sensors that reported at no onset
    pending: frozenset[str] = field(default_factory=frozenset)  # runs whose points are not all in InfluxDB

    @property
    def summaries(self) -> list[RunSummary]:
        return [s for _, s in self.runs]

    @property
    def analysed(self) -> list[tuple[RunData, RunSummary]]:
        """The runs whose points are all in InfluxDB: the ones the campaign's results are made of."""
        return [(d, s) for d, s in self.runs if d.run not in self.pending]


def _short(key: str) -> str:
    """rig_telemetry.drive_ctrl_c -> drive_ctrl: field names stay unique across rig and drive sensors."""
    return key.split(".", 1)[1].removesuffix("_c")


def run_fields(s: RunSummary) -> dict[str, float | int | str | bool]:
    """Every analysis field of a run summary; each field always of one type (InfluxDB keeps a field's)."""
    out: dict[str, float | int | str | bool] = dict(s.throttle.fields(s.scale))
    out["complete"] = s.complete
    out["analysed"] = True
    out["missing"] = "; ".join(s.missing)  # empty when complete: a rewrite clears what an earlier one said
    for key, value in s.at_onset_c.items():
        out[f"onset_{_short(key)}_c"] = float(value)
    for key, value in s.peak_c.items():
        out[f"peak_{_short(key)}_c"] = float(value)
    for key, by_threshold in s.above_s.items():
        for threshold, seconds in by_threshold.items():
            out[f"above{threshold:g}_{_short(key)}_s"] = float(seconds)
    if s.baseline_ctrl_c is not None:
        out["baseline_ctrl_c"] = float(s.baseline_ctrl_c)
    if s.recovery_s is not None:
        out["recovery_s"] = float(s.recovery_s)
    for name, delta in s.drive.tmt.items():
        out[f"run_{name}"] = float(delta)
    if s.drive.max_power_state is not None:
        out["max_power_state"] = int(s.drive.max_power_state)
    if s.lag is not None:
        out.update(s.lag.fields())
    return {k: v for k, v in out.items() if not isinstance(v, float) or math.isfinite(v)}


def run_tags(data: RunData) -> RunTags:
    t = data.tags
    return RunTags(
        rig=t.get("rig") or "unknown",
        run=data.run,
        campaign=t.get("campaign") or "adhoc",
        **{k: t.get(k) for k in (*FACTORS, *LAB_TAGS)},
    )


PENDING_NOTE = "points still in its spool, not all in InfluxDB (`thermrig db drain` sends them)"


def analyse_campaign(
    settings: InfluxSettings,
    campaign: str,
    thresholds: tuple[float, ...] = THRESHOLDS_C,
    pending: Collection[str] = (),
) -> CampaignAnalysis:
    """Every run of the campaign analysed; the cells, effects and ranking of those not pending."""
    waiting = frozenset(pending)
    runs = []
    for d in load_campaign(settings, campaign):
        s = analyse_run(d, thresholds)
        runs.append((d, replace(s, missing=[PENDING_NOTE, *s.missing]) if d.run in waiting else s))
    counted = [(d, s) for d, s in runs if d.run not in waiting]
    summaries = [s for _, s in counted]
    ranking, silent = rank_sensors(counted)
    order = {d.run: i for i, (d, _) in enumerate(runs, start=1)}
    return CampaignAnalysis(campaign, runs, cells(summaries), effects(summaries, order), ranking, silent, waiting)


def run_lines(runs: list[tuple[RunData, RunSummary]]) -> list[str]:
    lines = []
    for data, s in runs:
        ns = data.summary_ns or (data.end_ms * 1_000_000 if data.end_ms is not None else time.time_ns())
        lines.append(summary_line(run_fields(s), ns, run_tags(data)))
    return lines


def campaign_lines(a: CampaignAnalysis) -> list[str]:
    lines = run_lines(a.analysed)
    ends = [d.end_ms for d, _ in a.analysed if d.end_ms is not None]
    ns = (max(ends) if ends else int(time.time() * 1000)) * 1_000_000
    base = {"campaign": a.campaign}
    for c in a.cells:
        tags = {**base, **c.levels, "metric": c.metric}
        fields: dict[str, float | int | str | bool] = {"n": c.n, "mean": c.mean}
        if c.sd is not None:
            fields["sd"] = c.sd
        lines.append(tagged_line(CAMPAIGN_SUMMARY, tags, fields, ns))
    for e in a.effects:
        tags = {**base, "factor": e.factor, "level": e.level, "reference": e.reference, "metric": e.metric}
        fields = {"n": e.n, "n_reference": e.n_reference, "difference": e.difference, "note": e.note}
        for key, value in (("ci_low", e.ci_low), ("ci_high", e.ci_high), ("order_r", e.order_r)):
            if value is not None and math.isfinite(value):
                fields[key] = value
        lines.append(tagged_line(CAMPAIGN_EFFECT, tags, fields, ns))
    for rank, r in enumerate(a.ranking, start=1):
        fields = {"rank": rank, "runs": r.runs, "missed": r.missed, "median_c": r.median_c, "mean_c": r.mean_c}
        fields.update(mad_c=r.mad_c, spread_c=r.spread_c, range_c=r.range_c, rise_c=r.rise_c, follows=r.follows)
        for key, value in (("sd_c", r.sd_c), ("error_s", r.error_s), ("rms_error_s", r.rms_error_s)):
            if value is not None:
                fields[key] = value
        lines.append(tagged_line(SENSOR_RANK, {**base, "sensor": r.sensor}, fields, ns))
    return lines


def write_lines(settings: InfluxSettings, lines: list[str]) -> None:
    """Synchronous write through the official client; a failure is one clear error."""
    try:
        with InfluxDBClient(url=settings.url, token=settings.token, org=settings.org, timeout=30_000) as client:
            quiet_retries()  # the campaign's spool writers may be retrying through an outage meanwhile
            client.write_api(write_options=SYNCHRONOUS).write(bucket=settings.bucket, record=lines)
    except Exception as exc:  # the client raises urllib3 and ApiException alike: one message for the user
        raise QueryError(f"cannot write the summaries to InfluxDB at {settings.url}: {exc}") from exc


def store_campaign(settings: InfluxSettings, campaign: str, pending: Collection[str] = ()) -> CampaignAnalysis:
    """Analyse every run of the campaign and (re)write its run and campaign summaries; runs pending (their
    points still in a spool) are left out of both."""
    a = analyse_campaign(settings, campaign, pending=pending)
    write_lines(settings, campaign_lines(a))
    return a


def store_run(settings: InfluxSettings, campaign: str, run: str) -> RunSummary:
    """Analyse one run and (re)write its run summary (the campaign runner calls this as a run ends)."""
    [data] = load_campaign(settings, campaign, only_run=run)
    summary = analyse_run(data)
    write_lines(settings, run_lines([(data, summary)]))
    return summary
