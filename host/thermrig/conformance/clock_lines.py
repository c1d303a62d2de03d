"""What PING exchanges say of a rig's clock, whatever the host's scheduling did to them.

The rig stamped each PING between the host's send and the reply's arrival: the true host time of the
stamp lies inside that round trip, however long the host took to send or to read (a busy host widens
the interval, never moves the truth out of it). A clock that runs at a steady rate therefore has a line,
utc = a + (1 + d) * uptime, through every round trip. The best line is the one that lies least far
outside any of them (a linear program): for a steady clock that distance is zero; for a clock that
jumped or changed pace it is about half the jump, less the narrowest round trips around it. The rates
of the lines that fit that well bound the clock's rate against the host's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from thermrig.link.timesync import SyncSample

SLACK_MS = 0.05  # the rate range is of the lines within this of the best one's distance


@dataclass(frozen=True)
class ClockLines:
    outside_ms: float  # how far the best line lies outside the round trip it misses most (0: inside all)
    ppm_low: float  # the rig's clock against the host's, ppm (+: it runs fast), over the lines that fit
    ppm_high: float

    @property
    def ppm(self) -> float:
        return (self.ppm_low + self.ppm_high) / 2


def clock_lines(samples: list[SyncSample]) -> ClockLines:
    """The best line through the samples' round trips, and the rates of those nearly as good. Needs two
    samples at different uptimes."""
    if len({s.mcu_us for s in samples}) < 2:
        raise ValueError("a clock's rate needs two PINGs at different uptimes")
    first = samples[0]
    x = np.array([(s.mcu_us - first.mcu_us) * 1e-6 for s in samples])  # MCU seconds
    low = np.array([(s.host_send - first.host_send) * 1e3 for s in samples])  # host ms
    high = np.array([(s.host_recv - first.host_send) * 1e3 for s in samples])
    # Variables: a (ms), d (ms per MCU s: 1e3 ppm host per MCU), e (ms). a + 1000 x (1 + d/1000) within
    # [low - e, high + e] for every sample.
    base = 1e3 * x
    ones = np.ones_like(x)
    rows = np.concatenate([np.column_stack([-ones, -x, -ones]), np.column_stack([ones, x, -ones])])
    bounds_rhs = np.concatenate([base - low, high - base])
    free = [(None, None), (None, None), (0, None)]
    best = linprog([0, 0, 1], A_ub=rows, b_ub=bounds_rhs, bounds=free, method="highs")
    if not best.success:
        raise ValueError(f"no line through the round trips: {best.message}")
    outside = float(best.x[2])
    near = [(None, None), (None, None), (0, outside + SLACK_MS)]
    rates = [linprog([0, sign, 0], A_ub=rows, b_ub=bounds_rhs, bounds=near, method="highs") for sign in (1, -1)]
    # d is host ms per MCU s beyond 1000: the rig's clock runs -d * 1000 ppm against the host's. The best
    # line is among those nearly as good: where the solver gives up on an end, the range ends there.
    d_low, d_high = (float(r.x[1]) if r.success else float(best.x[1]) for r in rates)
    return ClockLines(outside, -d_high * 1e3, -d_low * 1e3)
