"""The drive's own account of its throttling, where it reports one: NVMe thermal-management transition
counts and times (smart-log, cumulative since power-on: a run's share is last minus first), the OCP
extended SMART log's thermal throttling event count where the drive has one, and the power state (only
where the monitor records `power_state`)."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.analysis.run_data import Trace

COUNTERS = ("tmt1_count", "tmt1_time_s", "tmt2_count", "tmt2_time_s", "ocp_throttle_events")


@dataclass(frozen=True)
class DriveState:
    tmt: dict[str, float]  # counter -> its increase over the run; empty when the drive reports none
    max_power_state: int | None  # the deepest power state seen; None when not reported

    def reported(self) -> bool:
        return bool(self.tmt) or self.max_power_state is not None


def drive_state(counters: dict[str, Trace]) -> DriveState:
    tmt = {
        name: float(counters[name].values[-1] - counters[name].values[0])
        for name in COUNTERS
        if name in counters and len(counters[name].values)
    }
    power = counters.get("power_state")
    deepest = int(power.values.max()) if power is not None and len(power.values) else None
    return DriveState(tmt, deepest)
