"""Throttle onset and depth from a per-second throughput series, as the Puget tables state them:
"throttled by ~X % after ~Y s" (docs/virtual-drive.md, "Measuring onset and depth").

- plateau: the median of seconds 2-4 of the job (the first second is partial);
- onset: seconds from the job's start to the end of the first of SUSTAIN consecutive seconds below
  (1 - DROP) x plateau (one slow second, a hiccup of the host, is not a throttle);
- depth: 100 x (1 - mean of the last TAIL_S seconds / plateau), in percent.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

DROP = 0.10  # a second 10 % under the plateau has left it
TAIL_S = 30  # the throttled level: the mean of the job's last 30 s
SUSTAIN = 2  # seconds in a row under the plateau that make an onset


@dataclass(frozen=True)
class Throttle:
    plateau: float  # throughput before throttling, in the series' unit
    onset_s: float | None  # None: never left the plateau
    depth_pct: float
    seconds: int


def throttle_of(series: Sequence[float]) -> Throttle:
    """series[i] = mean throughput over second i + 1 of the job (i = 0 is the first second)."""
    if len(series) < TAIL_S + 5:
        raise ValueError(f"a throttle needs at least {TAIL_S + 5} s of throughput, got {len(series)}")
    plateau = statistics.median(series[1:4])
    if plateau <= 0:
        raise ValueError("no throughput at the start of the job")
    low = [v < (1 - DROP) * plateau for v in series]
    onset = next((i + 1.0 for i in range(1, len(low) - SUSTAIN + 1) if all(low[i : i + SUSTAIN])), None)
    tail = series[-TAIL_S:]
    depth = 100.0 * (1.0 - sum(tail) / len(tail) / plateau)
    return Throttle(plateau=plateau, onset_s=onset, depth_pct=depth, seconds=len(series))


def per_second(stamps_ms: Sequence[int], values: Sequence[float], start_ms: int | None = None) -> list[float]:
    """fio's per-second log (window-end stamps) as a series from the job's start; a missing second
    counts as zero (the drive moved nothing)."""
    if not stamps_ms:
        return []
    start = start_ms if start_ms is not None else stamps_ms[0] - 1000
    out: list[float] = []
    for t, v in zip(stamps_ms, values, strict=True):
        i = max(0, round((t - start) / 1000.0) - 1)
        while len(out) < i:
            out.append(0.0)
        if len(out) == i:
            out.append(float(v))
    return out
