"""The Puget-style table, read back from InfluxDB: per run of a campaign, throttle onset and depth from
fio's per-second bandwidth (measurement fio_interval), beside the published figures when asked."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from thermrig.analysis.published import PUGET, PugetCell
from thermrig.analysis.throttle import TAIL_S, per_second, throttle_of
from thermrig.db.query import influxql
from thermrig.db.settings import InfluxSettings

GROUP = ("run", "slot", "heatsink", "profile", "workload", "drive_model", "job", "rw")


@dataclass(frozen=True)
class ThrottleRow:
    run: str
    slot: str
    heatsink: str
    profile: str
    workload: str
    drive_model: str
    seconds: int
    onset_s: float | None
    depth_pct: float | None
    plateau_bps: float | None  # at the drive's scale (the virtual drive's wire scale undone)

    def published(self) -> PugetCell | None:
        return next((c for c in PUGET if c.slot == self.slot and c.profile == self.profile), None)


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def throttle_table(settings: InfluxSettings, campaign: str) -> list[ThrottleRow]:
    where = f'"campaign" = {_quote(campaign)}'
    group = ", ".join(f'"{t}"' for t in GROUP)
    series = influxql(settings, f"SELECT bw_bps FROM fio_interval WHERE {where} GROUP BY {group}", epoch="ms")
    scales = {
        s.tags.get("run", ""): float(s.values[0][1] or 1.0)
        for s in influxql(settings, f'SELECT last(bw_scale) FROM run_summary WHERE {where} GROUP BY "run"')
        if s.values
    }
    by_run: dict[str, list] = defaultdict(list)
    for s in series:
        by_run[s.tags.get("run", "")].append(s)
    rows = []
    for run, items in sorted(by_run.items()):
        last_job = max(s.tags.get("job", "") for s in items)
        chosen = max(
            (s for s in items if s.tags.get("job", "") == last_job), key=lambda s: sum(v[1] or 0 for v in s.values)
        )
        values = [v for v in chosen.values if v[1] is not None]
        series_bps = per_second([int(v[0]) for v in values], [float(v[1]) for v in values])
        scale = scales.get(run, 1.0) or 1.0
        onset = depth = plateau = None
        if len(series_bps) >= TAIL_S + 5:
            th = throttle_of(series_bps)
            onset, depth, plateau = th.onset_s, th.depth_pct, th.plateau / scale
        t = chosen.tags
        rows.append(
            ThrottleRow(
                run=run,
                slot=t.get("slot") or "-",
                heatsink=t.get("heatsink") or "-",
                profile=t.get("profile") or "-",
                workload=t.get("workload") or "-",
                drive_model=t.get("drive_model") or "-",
                seconds=len(series_bps),
                onset_s=onset,
                depth_pct=depth,
                plateau_bps=plateau,
            )
        )
    return rows
