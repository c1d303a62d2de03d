"""Which sensor predicts throttling (docs/analysis.md): across a campaign's throttled runs, each
sensor's temperature at the onset, its spread, and how well "the sensor reaches its mean onset
temperature" times the onset. A sensor that reads the throttling part (the controller) crosses the same
temperature at every onset; one that lags it (the NVMe composite on the NAND side) crosses it early or
late depending on the slot and the chassis heat."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from thermrig.analysis.run_analysis import RunSummary
from thermrig.analysis.run_data import RunData, sensor_label

MIN_RISE_C = 1.0
MAD_TO_SD = 1.4826  # a normal spread's standard deviation from its median absolute deviation
# What one reading can resolve: NVMe reports whole kelvin; the rig's MAX31855 thermocouples 0.25 C.
RESOLUTION_C = {"drive_smart": 1.0, "rig_telemetry": 0.25}


@dataclass(frozen=True)
class SensorRank:
    sensor: str  # "measurement.field"
    label: str
    runs: int  # throttled runs where it reported at the onset
    median_c: float  # its temperature at onset, median over those runs: the predicting level
    mean_c: float
    sd_c: float | None  # sample standard deviation (None for one run)
    mad_c: float  # median absolute deviation from median_c: the spread one odd run does not dominate
    range_c: float
    spread_c: float  # sqrt((1.4826 MAD)^2 + resolution^2 / 12): the robust spread and the reading's quantization
    rise_c: float  # median over those runs of its rise from the job's start to the onset
    error_s: float | None  # median |time it first reached median_c - the onset moment| over those runs
    rms_error_s: float | None
    missed: int  # throttled runs where it never reached median_c during the job

    @property
    def follows(self) -> bool:
        """It heats with the drive: its rise to the onset stands out of its spread (ambient does not)."""
        return self.rise_c >= max(MIN_RISE_C, 3 * self.mad_c)

    def as_predictor(self) -> str:
        """How `thermrig analyze` says it predicts the onset (of the best: "best onset predictor: ...")."""
        return (
            f"{self.label}, {self.median_c:.1f} °C at onset (spread {self.spread_c:.2f} °C), "
            f"onset timed within {self.error_s or 0:.1f} s (median)"
        )

    def key(self) -> tuple[bool, float, float]:
        """Ranking: sensors that follow the drive first, then by the spread at onset, then the plain sd."""
        return (not self.follows, self.spread_c, self.sd_c if self.sd_c is not None else float("inf"))


def _first_crossing_s(data: RunData, sensor: str, start_ms: int, level: float, end_ms: float) -> float | None:
    trace = data.temps[sensor].between(start_ms, end_ms)
    hit = np.nonzero(trace.values >= level)[0]
    return None if len(hit) == 0 else float((trace.t_ms[hit[0]] - start_ms) / 1000.0)


def rank_sensors(runs: list[tuple[RunData, RunSummary]]) -> tuple[list[SensorRank], list[str]]:
    """The ranking (best predictor first) and the sensors that reported at no onset at all."""
    throttled = [(d, s) for d, s in runs if s.throttle.onset_s is not None and s.throttle.start_ms is not None]
    sensors = sorted({k for d, _ in runs for k in d.temps})
    ranks, silent = [], []
    for sensor in sensors:
        at = [(d, s, s.at_onset_c[sensor]) for d, s in throttled if sensor in s.at_onset_c]
        if not at:
            silent.append(sensor)
            continue
        temps = np.array([t for _, _, t in at])
        level = float(np.median(temps))
        errors, rises, missed = [], [], 0
        for d, s, t in at:
            start = s.throttle.start_ms
            moment = s.throttle.onset_at_s
            assert start is not None and moment is not None
            at_start = d.temps[sensor].at(start)
            if at_start is not None:
                rises.append(t - at_start)
            end = start + s.throttle.seconds * 1000.0
            crossed = _first_crossing_s(d, sensor, start, level, end)
            if crossed is None:
                missed += 1
            else:
                errors.append(crossed - moment)
        ranks.append(
            SensorRank(
                sensor=sensor,
                label=sensor_label(sensor),
                runs=len(at),
                median_c=level,
                mean_c=float(temps.mean()),
                sd_c=float(temps.std(ddof=1)) if len(temps) > 1 else None,
                mad_c=(mad := float(np.median(np.abs(temps - level)))),
                spread_c=math.sqrt((MAD_TO_SD * mad) ** 2 + RESOLUTION_C.get(sensor.split(".")[0], 0.0) ** 2 / 12),
                range_c=float(temps.max() - temps.min()),
                rise_c=float(np.median(rises)) if rises else 0.0,
                error_s=float(np.median(np.abs(errors))) if errors else None,
                rms_error_s=math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else None,
                missed=missed,
            )
        )
    return sorted(ranks, key=SensorRank.key), silent
