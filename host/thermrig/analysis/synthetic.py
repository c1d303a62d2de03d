"""Synthetic throughput traces with a known onset and depth: the test set of the throttle definitions
(tests) and the source of the onset/depth error figure (bench). Seeded: every run gives the same set."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Case:
    name: str
    series: list[float]
    onset_s: float | None  # the true onset: seconds from the job's start to the end of its first low second
    depth_pct: float  # the true depth against the true plateau
    reference: float | None = None  # a plateau known from elsewhere (throttled from the first second)


def _trace(
    plateau: float, onset: int | None, depth: float, seconds: int, noise: float, seed: int, lead_zeros: int = 0
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.full(seconds, plateau)
    if onset is not None:
        k = np.arange(seconds)
        fall = np.clip((k - (onset - 1)) / 3.0 + 1 / 3.0, 0, 1)  # falls over 3 s, the first low second = onset
        y = plateau * (1 - depth / 100.0 * fall)
    y = y + rng.normal(0, noise * plateau, seconds)
    y[:lead_zeros] = 0.0
    return y


def cases() -> list[Case]:
    p = 1500e6
    out = [
        Case("clean", list(_trace(p, 55, 40, 120, 0.0, 1)), 55, 40),
        Case("noise 2 %", list(_trace(p, 47, 45, 120, 0.02, 2)), 47, 45),
        Case("noise 3 %, fast", list(_trace(p, 7, 76, 120, 0.03, 3)), 7, 76),
        Case("no throttling", list(_trace(p, None, 0, 120, 0.02, 5)), None, 0),
    ]
    dips = _trace(p, 60, 42, 120, 0.01, 6)
    for second in (12, 25, 38, 50):  # one slow second each (a host hiccup), never two in a row
        dips[second] *= 0.6
    out.append(Case("single-second dips", list(dips), 60, 42))
    drift = _trace(p, 40, 50, 120, 0.01, 7) * np.linspace(1.0, 0.95, 120)  # 5 % slow drift over the job
    tail_true = float(np.mean(drift[-30:]))
    out.append(Case("slow drift", list(drift), 40, 100 * (1 - tail_true / p)))
    zeros = _trace(p, 30, 60, 120, 0.01, 8, lead_zeros=3)  # the drive answered 3 s late: onset from the start
    out.append(Case("starts at zero", list(zeros), 30, 60))
    first = _trace(p, 1, 50, 120, 0.01, 9)  # hot already: throttled from the first second
    out.append(Case("throttled from the first second", list(first), 1, 50, reference=p))
    return out
