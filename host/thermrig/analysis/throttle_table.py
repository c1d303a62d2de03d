"""The Puget-style table, read back from InfluxDB: per run of a campaign, throttle onset and depth from
fio's per-second bandwidth (measurement fio_interval) through the one throttle summary
(analysis.throttle_summary), each fall attributed with the drive's counters and the simulator's lateness
(drive_smart), beside the published figures when asked."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.analysis.influx_source import NoData, add_counters, campaign_runs
from thermrig.analysis.lag import run_lag
from thermrig.analysis.published import PUGET, PugetCell
from thermrig.analysis.run_data import RunData
from thermrig.analysis.throttle_summary import throttle_summary
from thermrig.db.influx_settings import InfluxSettings


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
    note: str = ""  # what is missing or wrong with this run's data ("" when complete)
    onset_cause: str = ""  # thermal, cache or unclear (analysis.attribution); "" without an onset
    host_stalls: tuple[int, ...] = ()  # falls of the throughput judged the host's, first second into the job
    host_lost_s: float = 0.0  # the writing time the host stalls before the onset lost
    lag_ms: float | None = None  # the simulated world's worst lag in the workload (analysis.lag); None: unmeasured
    onset_drive_s: float | None = None  # a simulated run's onset in the drive's own time (the plant's lag taken off)
    hctm: str = "-"  # the campaign's hctm factor level (tag: "off", "55-65"), "-" without it
    status: str | None = "ok"  # how the run ended (its run_stop: ok, failed, aborted); None: never stopped

    def published(self) -> PugetCell | None:
        return next((c for c in PUGET if c.slot == self.slot and c.profile == self.profile), None)


def row_of(data: RunData) -> ThrottleRow:
    th = throttle_summary(data.jobs, data.scale, counters=data.counters)
    lag = run_lag(data)
    notes = [th.note] if th.note else []
    if data.status not in (None, "ok"):
        notes.append(f"run {data.status}")
    elif data.status is None:
        notes.append("run never stopped")
    origin = data.phases.get("workload", th.start_ms)
    notes += [gap.describe(origin) for gap in data.workload_gaps()]
    if th.host_stalls:
        notes.append(th.describe_stalls())
    if lag is not None and lag.over_bound:
        notes.append(lag.describe())
    if data.stored.get("analysed") is False:  # the campaign runner's summary, not yet completed
        notes.append("summary not analysed yet (complete=false)")
    t = data.tags
    return ThrottleRow(
        run=data.run,
        slot=t.get("slot") or "-",
        heatsink=t.get("heatsink") or "-",
        profile=t.get("profile") or "-",
        workload=t.get("workload") or "-",
        drive_model=t.get("drive_model") or "-",
        seconds=th.seconds,
        onset_s=th.onset_s,
        depth_pct=th.depth_pct,
        plateau_bps=th.plateau_bps,
        onset_cause=th.onset_cause,
        host_stalls=th.host_stalls,
        host_lost_s=th.host_lost_s,
        lag_ms=None if lag is None else lag.worst_ms,
        onset_drive_s=th.onset_drive_s,
        note="; ".join(notes),
        hctm=t.get("hctm") or "-",
        status=data.status,
    )


def throttle_table(settings: InfluxSettings, campaign: str) -> list[ThrottleRow]:
    """Every run of the campaign, a run with no usable data included with its note; none when InfluxDB
    holds nothing of it (runs whose points still wait in a spool are the caller's to add)."""
    try:
        runs = campaign_runs(settings, campaign)
    except NoData:
        return []
    return [row_of(data) for data in add_counters(settings, runs)]
