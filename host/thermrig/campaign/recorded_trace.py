"""A chassis trace taken from a recorded run (`trace = "influx:RUN_ID"` in a profile): the run's chassis
air from InfluxDB (rig_telemetry, every frame it recorded), against the rig's own time (its uptime: a
simulated run's accelerated phases count at the length the rig lived them), from the run's baseline (a
campaign run: its equilibrium reached; a recording without phases: its start) to its end, as the same
time series a CSV trace gives. Every frame, not the analysis's 1 s means: a second of wall time is ten
of rig time at 10x, and a mean that began before the baseline would be cut off with them. Read before
the campaign's first run."""

from __future__ import annotations

import dataclasses

import numpy as np

from thermrig.analysis.influx_source import UPTIME, campaign_of, campaign_runs, quote, run_window
from thermrig.analysis.run_data import Trace
from thermrig.campaign.spec import Campaign, CampaignError
from thermrig.campaign.trace_player import AIR_CHANNEL
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import QueryError, influxql
from thermrig.db.schema import TELEMETRY
from thermrig.hardware.chassis_trace import RECORDED, ChassisTrace, trace_of
from thermrig.hardware.profiles import ProfileError

AIR_FIELD = f"{AIR_CHANNEL}_c"


def recorded_trace(settings: InfluxSettings, run: str) -> ChassisTrace:
    """The chassis air of a run recorded in InfluxDB as a trace (seconds of rig time from its baseline)."""
    source = f"{RECORDED}{run}"
    campaign, _ = campaign_of(settings, run)
    (data,) = campaign_runs(settings, campaign, run)
    start, end = run_window(data)
    start = int(data.phases.get("baseline", start))  # the way to equilibrium is the recorded rig's, not the condition
    q = (
        f'SELECT "{AIR_FIELD}", "{UPTIME}" FROM {TELEMETRY} '
        f'WHERE "run" = {quote(run)} AND time >= {start}ms AND time <= {end}ms'
    )
    rows = [row for s in influxql(settings, q, epoch="ms") for row in s.values if None not in row[1:]]
    if len(rows) < 2:
        raise ProfileError(f"{source}: run {run!r} recorded under two frames of {AIR_CHANNEL} from its baseline")
    wall, air, uptime = (np.array([row[i] for row in rows], dtype=float) for i in range(3))
    data.uptime = Trace(wall, uptime)
    elapsed = data.rig_ms(wall)  # the rig's own elapsed time at each frame (a reset counted at wall time)
    assert elapsed is not None
    seconds: list[float] = []
    values: list[float] = []
    for ms, value in zip(elapsed, air, strict=True):
        t = round(float(ms) / 1000, 3)
        if not seconds or t > seconds[-1]:  # a stretch where the rig's clock stood still keeps its first
            seconds.append(t)
            values.append(round(float(value), 3))
    return trace_of(source, seconds, values)


def resolve_recorded_traces(campaign: Campaign, settings: InfluxSettings) -> None:
    """Before the first run: every profile the campaign plays whose trace is a recorded run gets that run's
    chassis air as its trace (equilibrium at its first value); a run not found, or one whose trace is
    shorter than the profile's workload_at_s, is refused in one line."""
    for name in campaign.factors.get("profile", ()):
        profile = campaign.profiles[name]
        if profile.recorded_run is None or profile.trace is not None:
            continue
        where = f'{campaign.path}: profile {name!r}: trace = "{RECORDED}{profile.recorded_run}"'
        try:
            trace = recorded_trace(settings, profile.recorded_run)
        except (QueryError, ProfileError) as exc:
            raise CampaignError(f"{where}: {exc}") from exc
        if profile.workload_at_s > trace.duration_s:
            raise CampaignError(
                f"{where}: workload_at_s {profile.workload_at_s:g} is past the trace's end ({trace.duration_s:g} s)"
            )
        campaign.profiles[name] = dataclasses.replace(profile, trace=trace, air_c=trace.air_c[0])
