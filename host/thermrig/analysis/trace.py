"""One sensor or counter of a run against time (analysis.run_data holds them by name)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
