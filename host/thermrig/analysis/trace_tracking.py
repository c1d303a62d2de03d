"""How closely the rig followed a chassis trace: the chassis air measured against the trace's target at
the same moment, over the seconds the trace was played (docs/analysis.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence


def tracking_error(
    seconds: Sequence[float], air_c: Sequence[float], target: Callable[[float], float]
) -> dict[str, float]:
    """seconds: each air sample's time into the trace. RMS and largest absolute difference (°C), and the
    seconds covered; empty when there is no sample."""
    if not seconds:
        return {}
    errors = [a - target(t) for t, a in zip(seconds, air_c, strict=True)]
    return {
        "trace_rms_c": math.sqrt(sum(e * e for e in errors) / len(errors)),
        "trace_max_c": max(abs(e) for e in errors),
        "trace_s": float(seconds[-1] - seconds[0]),
    }
