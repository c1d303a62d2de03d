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


@dataclass(frozen=True)
class SensorRank:
    sensor: str  # "measurement.field"
    label: str
    runs: int  # throttled runs where it reported at the onset
    mean_c: float | None  # its temperature at onset, mean over those runs
    sd_c: float | None  # and the standard deviation (the spread)
    range_c: float | None
    error_s: float | None  # RMS of (time it first reached mean_c - the onset) over those runs
    missed: int  # throttled runs where it never reached mean_c during the job

    def key(self) -> tuple[float, float, float]:
        """Ranking: fewest misses, then the smallest timing error, then the smallest spread."""
        inf = float("inf")
        return (float(self.missed), self.error_s if self.error_s is not None else inf, self.sd_c or inf)


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
        mean = float(temps.mean())
        errors, missed = [], 0
        for d, s, _ in at:
            start = s.throttle.start_ms
            assert start is not None and s.throttle.onset_s is not None
            end = start + s.throttle.seconds * 1000.0
            crossed = _first_crossing_s(d, sensor, start, mean, end)
            if crossed is None:
                missed += 1
            else:
                errors.append(crossed - s.throttle.onset_s)
        ranks.append(
            SensorRank(
                sensor=sensor,
                label=sensor_label(sensor),
                runs=len(at),
                mean_c=mean,
                sd_c=float(temps.std(ddof=1)) if len(temps) > 1 else None,
                range_c=float(temps.max() - temps.min()),
                error_s=math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else None,
                missed=missed,
            )
        )
    return sorted(ranks, key=SensorRank.key), silent
