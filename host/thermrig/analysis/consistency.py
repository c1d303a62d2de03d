"""Performance-consistency scoring (seeds 003/004) and the SNIA PTS steady-state criterion."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ConsistencyScore:
    average: float  # mean of the per-second values over the window
    consistency: float  # average / standard deviation: higher is steadier
    seconds: int


def consistency_score(per_second: list[float], window_s: int = 400) -> ConsistencyScore:
    """Score the last window_s seconds of a per-second series (IOPS, as AnandTech scores it)."""
    if len(per_second) < 2:
        raise ValueError("need at least two seconds of data to score consistency")
    tail = np.asarray(per_second[-window_s:], dtype=float)
    sd = float(tail.std())
    return ConsistencyScore(float(tail.mean()), float(tail.mean() / sd) if sd > 0 else float("inf"), len(tail))


def snia_steady_state(rounds: list[float], window: int = 5) -> bool:
    """SNIA PTS: over the last `window` rounds, the range of the tracked variable is within 20 % of its
    average, and the least-squares line's excursion across the window is within 10 % of the average."""
    if len(rounds) < window:
        return False
    y = np.asarray(rounds[-window:], dtype=float)
    avg = float(y.mean())
    if avg == 0:
        return False
    slope = float(np.polyfit(np.arange(window), y, 1)[0])
    return float(y.max() - y.min()) <= 0.2 * abs(avg) and abs(slope * (window - 1)) <= 0.1 * abs(avg)
