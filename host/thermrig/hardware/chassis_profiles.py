"""Chassis heat profiles and the SET they become: one parser for the hardware file
(hardware/profiles/chassis_profiles.toml) and a campaign's own [profiles.NAME] tables."""

from __future__ import annotations

import re
from dataclasses import dataclass

from thermrig.hardware.chassis_trace import RECORDED, ChassisTrace, read_trace
from thermrig.hardware.profiles import ProfileError, profile_file
from thermrig.protocol import limits
from thermrig.toml_file import TomlFile

KEYS = {"description", "air_c", "heater_limit_pct", "fan0_pct", "fan1_pct", "heat", "trace", "workload_at_s"}
_RUN_ID = re.compile(r"[A-Za-z0-9_.:+-]{1,64}")  # a run id is a tag value
DEFAULT_PCT = {"heater_limit_pct": 100.0, "fan0_pct": 40.0, "fan1_pct": 0.0}


@dataclass(frozen=True)
class ChassisProfile:
    name: str
    description: str
    air_c: float | None  # None: heater off
    heater_limit_pct: float
    fan0_pct: float
    fan1_pct: float
    trace: ChassisTrace | None = None  # the air target as a time series (hardware/chassis_trace.py)
    workload_at_s: float = 0.0  # with a trace: the workload starts this far into it
    recorded_run: str | None = None  # trace = "influx:RUN_ID": the run whose chassis air becomes the trace

    def set_args(self) -> dict[str, int]:
        """The SET command's values in protocol units."""
        args = {"fan0": round(self.fan0_pct * 10), "fan1": round(self.fan1_pct * 10)}
        if self.air_c is None:
            args["heat"] = 0
        else:
            args.update(air=round(self.air_c * 100), hlim=round(self.heater_limit_pct * 10), heat=1)
        return args


def parse_profile(r: TomlFile, table: dict, section: str, name: str) -> ChassisProfile:
    """One profile's table: heat (default true) needs air_c; percentages default to DEFAULT_PCT."""
    r.known(table, section, KEYS)
    air = None
    trace = None
    recorded = None
    if "trace" in table:
        if "air_c" in table or table.get("heat") is False:
            raise r.fail(section, "trace", "a trace is the air target", "either trace or air_c (not heat = false)")
        source = r.get(table, section, "trace", str, 'a CSV file of seconds,air_c, or "influx:RUN_ID"')
        if source.startswith(RECORDED):
            recorded = source.removeprefix(RECORDED)
            if not _RUN_ID.fullmatch(recorded):
                raise r.fail(section, "trace", f"{source!r}", '"influx:RUN_ID", the id of a recorded run')
        else:
            try:
                trace = read_trace(r.path.parent / source)
            except ProfileError as exc:
                raise r.fail(section, "trace", str(exc), "a CSV file of seconds,air_c, relative to this file") from exc
            air = trace.air_c[0]  # equilibrium at the trace's start
    at = float(r.get(table, section, "workload_at_s", (int, float), "seconds into the trace", 0.0))
    if recorded is not None and at < 0:  # its length is known once the run is read (campaign/recorded_trace.py)
        raise r.fail(section, "workload_at_s", f"{at}", "seconds within the profile's trace (trace = ...)")
    if at and recorded is None and (trace is None or not 0 <= at <= trace.duration_s):
        raise r.fail(section, "workload_at_s", f"{at}", "seconds within the profile's trace (trace = ...)")
    if trace is None and recorded is None and r.get(table, section, "heat", bool, "true or false", True):
        lo, hi = limits.AIR_TARGET_MIN_C, limits.AIR_TARGET_MAX_C
        expected = f"the chassis-air target, {lo:g} to {hi:g} °C (the rig's limit)"
        air = r.get(table, section, "air_c", (int, float), expected, at_least=lo, at_most=hi)
    pct = {
        k: r.get(table, section, k, (int, float), "a percentage 0-100", d, at_least=0, at_most=100)
        for k, d in DEFAULT_PCT.items()
    }
    description = r.get(table, section, "description", str, "text", "")
    fans = pct["fan0_pct"], pct["fan1_pct"]
    return ChassisProfile(name, description, air, pct["heater_limit_pct"], *fans, trace, at, recorded)


def load_profile(name: str) -> ChassisProfile:
    r = profile_file("chassis_profiles.toml")
    if not isinstance(r.data.get(name), dict):
        raise ProfileError(f"{r.path}: no chassis profile [{name}] (known: {', '.join(r.data)})")
    return parse_profile(r, r.data[name], name, name)
