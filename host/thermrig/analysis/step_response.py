"""Step-response figures of a controlled temperature: settle time, overshoot, steady-state error."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StepResponse:
    settle_s: float | None  # time from the step until the value stays within the band; None if never
    overshoot_c: float  # peak beyond the target, in the direction of the step (0 if none)
    steady_error_c: float  # |mean - target| over the final window
    steady_sd_c: float  # standard deviation over the final window


def step_response(
    t: np.ndarray, value: np.ndarray, target: float, band_c: float = 0.5, final_window_s: float = 60.0
) -> StepResponse:
    """t in seconds from the step; value sampled at t. The final window is the last final_window_s."""
    t = np.asarray(t, dtype=float)
    value = np.asarray(value, dtype=float)
    if len(t) < 2 or t[-1] - t[0] < final_window_s:
        raise ValueError(f"need more than {final_window_s} s of samples to judge the steady state")
    outside = np.nonzero(np.abs(value - target) > band_c)[0]
    if len(outside) == 0:
        settle: float | None = 0.0
    elif outside[-1] == len(t) - 1:
        settle = None
    else:
        settle = float(t[outside[-1] + 1] - t[0])
    rising = target >= value[0]
    overshoot = float(max(0.0, (value.max() - target) if rising else (target - value.min())))
    final = value[t >= t[-1] - final_window_s]
    return StepResponse(settle, overshoot, float(abs(final.mean() - target)), float(final.std()))
