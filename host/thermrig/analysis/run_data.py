"""What the analysis needs of one run, whatever it was read from (InfluxDB, or a run in memory):
fio's per-second logs by job, every temperature sensor at 1 s, the drive's counters, the phases."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from thermrig.analysis.throttle_summary import JobLog

CONTROLLER = "rig_telemetry.drive_ctrl_c"  # the thermocouple on the drive's controller
FACTORS = ("slot", "heatsink", "airflow", "profile", "workload", "drive_model")


@dataclass(frozen=True)
class Trace:
    """One sensor or counter against time: Unix ms and values, in time order."""

    t_ms: np.ndarray
    values: np.ndarray

    def at(self, ms: float) -> float | None:
        """Linear interpolation at ms; None outside the trace (never extrapolated)."""
        if len(self.t_ms) == 0 or ms < self.t_ms[0] or ms > self.t_ms[-1]:
            return None
        return float(np.interp(ms, self.t_ms, self.values))

    def between(self, start_ms: float, end_ms: float) -> Trace:
        keep = (self.t_ms >= start_ms) & (self.t_ms <= end_ms)
        return Trace(self.t_ms[keep], self.values[keep])


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

    def factors(self) -> dict[str, str]:
        return {k: self.tags[k] for k in FACTORS if self.tags.get(k)}
