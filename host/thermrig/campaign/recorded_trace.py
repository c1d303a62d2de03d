"""A chassis trace taken from a recorded run (`trace = "influx:RUN_ID"` in a profile): the run's chassis
air from InfluxDB (rig_telemetry, 1 s means, read as the analysis reads every run), against the rig's own
time (its uptime: a simulated run's accelerated phases count at the length the rig lived them), from the
run's baseline (a campaign run: its equilibrium reached; a recording without phases: its start) to its
end, as the same time series a CSV trace gives. Read before the campaign's first run."""

from __future__ import annotations

import dataclasses

from thermrig.analysis.influx_source import campaign_of, load_campaign
from thermrig.campaign.chassis_trace import AIR_CHANNEL
from thermrig.campaign.spec import Campaign, CampaignError
from thermrig.db.query import QueryError
from thermrig.db.settings import InfluxSettings
from thermrig.hardware.chassis_trace import RECORDED, ChassisTrace, trace_of
from thermrig.hardware.profiles import ProfileError

AIR_FIELD = f"rig_telemetry.{AIR_CHANNEL}_c"


def recorded_trace(settings: InfluxSettings, run: str) -> ChassisTrace:
    """The chassis air of a run recorded in InfluxDB as a trace (seconds of rig time from its baseline)."""
    source = f"{RECORDED}{run}"
    campaign, _ = campaign_of(settings, run)
    (data,) = load_campaign(settings, campaign, run)
    air = data.temps.get(AIR_FIELD)
    if air is None or len(air.t_ms) < 2:
        raise ProfileError(f"{source}: run {run!r} recorded no {AIR_CHANNEL} telemetry in InfluxDB")
    start = data.phases.get("baseline")
    if start is not None:  # the way to equilibrium is the recorded rig's, not the condition
        air = air.between(start, float("inf"))
    if len(air.t_ms) < 2:
        raise ProfileError(f"{source}: run {run!r} recorded under two seconds of {AIR_CHANNEL} from its baseline")
    rig_ms = data.rig_ms(air.t_ms)
    at_ms = air.t_ms if rig_ms is None else rig_ms
    seconds: list[float] = []
    values: list[float] = []
    for ms, value in zip(at_ms, air.values, strict=True):
        t = round(float(ms - at_ms[0]) / 1000, 3)
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
