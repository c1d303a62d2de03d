"""Seeds 000 and 004 read back from InfluxDB after the pipeline's campaigns: each mixed sweep's mean IOPS
per step (fio's per-second logs, one job per step) and the hour's last 400 s of IOPS with the power
states the drive reported over them, in the shapes calibration.mixed judges."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from thermrig.analysis.influx_source import NoData, load_campaign
from thermrig.analysis.published import CONSISTENCY_WINDOW_S, MIXED_STEPS
from thermrig.analysis.run_data import RunData
from thermrig.analysis.sweep import sweep_curve
from thermrig.analysis.throttle_summary import job_series, measured_job
from thermrig.calibration.check import CalibrationCheck
from thermrig.calibration.mixed import (
    HEATSINKS,
    SteadyState,
    Sweep,
    judge_consistency,
    judge_mixed_random,
    judge_mixed_seq,
)
from thermrig.db.influx_settings import InfluxSettings
from thermrig.hardware.drive_profiles import DriveProfile

DRIVE = "950pro_512"
MIXED_CAMPAIGN, HOUR_CAMPAIGN = "calibrate-mixed-{}", "calibrate-consistency-{}"  # one per heatsink
MIXED_RANDOM, MIXED_SEQ, CONSISTENCY = "mixed-random", "mixed-seq", "consistency"  # their workloads
BLOCK = {MIXED_RANDOM: 4096, MIXED_SEQ: 128 * 1024}
T = TypeVar("T")


def _runs(settings: InfluxSettings, campaign: str) -> list[RunData]:
    try:
        return load_campaign(settings, campaign)
    except NoData:
        return []


def _ok(runs: list[RunData], workload: str) -> RunData | None:
    return next((r for r in runs if r.tags.get("workload") == workload and r.status == "ok"), None)


def sweep_of(data: RunData, bs: int, steps: tuple[int, ...] = MIXED_STEPS) -> Sweep | None:
    """Mean IOPS per step (drive scale), steps in the order they ran; None unless every step has data."""
    points = sweep_curve(data.jobs, data.scale)
    if len(points) != len(steps):
        return None
    return {pct: p.throughput_bps / bs for pct, p in zip(steps, points, strict=True)}


def steady_state_of(data: RunData, drive: DriveProfile, window_s: int = CONSISTENCY_WINDOW_S) -> SteadyState | None:
    """The measured job's IOPS over its last window_s seconds (drive scale) and the names of the power
    states drive_smart recorded over the same seconds."""
    start, iops = job_series(measured_job(data.jobs), iops=True)
    if start is None or len(iops) < window_s:
        return None
    end_ms = start + 1000 * len(iops)
    states = data.counters.get("power_state")
    seen = states.between(end_ms - 1000 * window_s, end_ms).values if states is not None else []
    names = {drive.states[round(v)].name for v in seen if 0 <= round(v) < len(drive.states)}
    return SteadyState([v / data.scale for v in iops[-window_s:]], names)


def seed_checks(settings: InfluxSettings, drive: DriveProfile) -> list[CalibrationCheck]:
    """The six checks of seeds 000 and 004 on what the pipeline's campaigns recorded ("not run" rows for
    a campaign that did not finish). Each campaign is read from InfluxDB once."""
    loaded = {c.format(h): _runs(settings, c.format(h)) for c in (MIXED_CAMPAIGN, HOUR_CAMPAIGN) for h in HEATSINKS}

    def each(campaign: str, workload: str, extract: Callable[[RunData], T | None]) -> dict[str, T] | None:
        """heatsink -> what extract finds in that heatsink's run of the workload; None unless both ran."""
        out = {}
        for heatsink in HEATSINKS:
            data = _ok(loaded[campaign.format(heatsink)], workload)
            value = None if data is None else extract(data)
            if value is None:
                return None
            out[heatsink] = value
        return out

    random = each(MIXED_CAMPAIGN, MIXED_RANDOM, lambda d: sweep_of(d, BLOCK[MIXED_RANDOM]))
    seq = each(MIXED_CAMPAIGN, MIXED_SEQ, lambda d: sweep_of(d, BLOCK[MIXED_SEQ]))
    tails = each(HOUR_CAMPAIGN, CONSISTENCY, lambda d: steady_state_of(d, drive))
    return (
        (judge_mixed_random(random) if random else _not_run("000 AnandTech", "950 Pro mixed 4KB random QD3", 2))
        + (judge_mixed_seq(seq) if seq else _not_run("000 AnandTech", "950 Pro mixed 128KB seq QD1", 2))
        + (judge_consistency(tails) if tails else _not_run("004 AnandTech", "950 Pro 4KB random write QD32 hour", 2))
    )


def _not_run(seed: str, cell: str, n: int) -> list[CalibrationCheck]:
    return [CalibrationCheck(seed, cell, "-", "not run", False) for _ in range(n)]
