"""What the analysis needs of one run, whatever it was read from (InfluxDB, or a run in memory):
fio's per-second logs by job, every temperature sensor at 1 s, the drive's counters, the phases."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from thermrig.analysis.throttle_summary import JobLog
from thermrig.analysis.trace import Trace

CONTROLLER = "rig_telemetry.drive_ctrl_c"  # the thermocouple on the drive's controller
FACTORS = ("slot", "heatsink", "airflow", "profile", "workload", "drive_model", "hctm")
LAB_TAGS = ("place", "test_pc", "firmware")  # a lab's runs (thermrig run --lab): where each ran


def sensor_label(key: str) -> str:
    """rig_telemetry.drive_ctrl_c -> "drive_ctrl (thermocouple)"; drive_smart.composite_c -> "composite (NVMe)"."""
    measurement, name = key.split(".", 1)
    name = name.removesuffix("_c")
    return f"{name} ({'NVMe' if measurement == 'drive_smart' else 'rig'})"


@dataclass
class RunData:
    run: str
    tags: dict[str, str]
    jobs: list[JobLog] = field(default_factory=list)
    scale: float = 1.0  # wire bytes per drive byte (the virtual drive); 1 for a real drive
    temps: dict[str, Trace] = field(default_factory=dict)  # "measurement.field" -> trace, degrees C
    counters: dict[str, Trace] = field(default_factory=dict)  # drive_smart tmt*, power_state
    phases: dict[str, int] = field(default_factory=dict)  # phase -> its first start, Unix ms
    status: str | None = None  # run_stop's reason: ok, failed, aborted; None if the run never stopped
    end_ms: int | None = None  # when the run ended (its run_stop, or its stored summary)
    summary_ns: int | None = None  # the stored run_summary point's own time: a rewrite lands on it
    stored: dict[str, object] = field(default_factory=dict)  # the run_summary fields already in InfluxDB
    gaps: list[Gap] = field(default_factory=list)  # stretches the recording lost the rig (gap events)
    uptime: Trace | None = None  # the rig's own clock (uptime_ms) against the recorded time, 1 s means

    def factors(self) -> dict[str, str]:
        return {k: self.tags[k] for k in FACTORS if self.tags.get(k)}

    def workload_window(self) -> tuple[float, float] | None:
        """The workload phase, Unix ms: from its start to the cool-down's (or the run's end)."""
        start = self.phases.get("workload")
        if start is None:
            return None
        end = self.phases.get("cooldown") or self.end_ms
        return float(start), float(end) if end is not None else float("inf")

    def workload_gaps(self) -> list[Gap]:
        """The gaps that overlap the workload phase (all of them when the run recorded no phases)."""
        window = self.workload_window()
        if window is None:
            return list(self.gaps)
        return [g for g in self.gaps if g.end_ms > window[0] and g.start_ms < window[1]]

    def rig_ms(self, t_ms: np.ndarray) -> np.ndarray | None:
        """Recorded times -> the rig's own elapsed ms (its uptime; a reset's jump counted at recorded
        speed), so an accelerated simulation's phases read at the length the rig lived them."""
        if self.uptime is None or len(self.uptime.t_ms) < 2:
            return None
        step = np.diff(self.uptime.values)
        wall = np.diff(self.uptime.t_ms)
        elapsed = np.concatenate(([0.0], np.cumsum(np.where(step >= 0, step, wall))))
        return np.interp(t_ms, self.uptime.t_ms, elapsed)


@dataclass(frozen=True)
class Gap:
    """A stretch without telemetry: from the last frame before it to the first after, Unix ms."""

    start_ms: float
    end_ms: float
    detail: str = ""

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000.0

    def describe(self, origin_ms: float | None = None) -> str:
        where = "" if origin_ms is None else f" at {(self.start_ms - origin_ms) / 1000.0:.0f} s"
        why = self.detail.split(":", 1)[0]  # the cause; the rest repeats the durations
        return f"a gap of {self.seconds:.1f} s in the workload{where}" + (f" ({why})" if why else "")
