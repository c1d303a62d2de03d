"""What PING exchanges say of a rig's clock, whatever the host's scheduling did to them.

The rig stamped each PING between the host's send and the reply's arrival: the true host time of the
stamp lies inside that round trip, however long the host took to send or to read (a busy host widens
the interval, never moves the truth out of it). A clock that counts in ticks (Zephyr's kernel clock: 10
ms in QEMU, 1 ms on native_sim) stamps the tick the line arrived in, so the arrival lies between the
stamp and the next tick; the tick is the largest divisor of 10 ms that every stamp is a multiple of,
apart from where it began. A
clock that runs at a steady rate therefore has a line, utc = a + (1 + d) * uptime, whose stretch from
each stamp to its next tick meets that PING's round trip. The best line is the one that lies least far
outside any of them (a linear program): for a steady clock that distance is zero; for a clock that
jumped or changed pace it is about half the jump, less the narrowest round trips around it. The rates
of the lines that fit that well bound the clock's rate against the host's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from thermrig.link.timesync import SyncSample

SLACK_MS = 0.05  # the rate range is of the lines within this of the best one's distance
TICK_MAX_US = 10_000  # the coarsest clock taken for a tick counter (Zephyr at 100 ticks a second); its divisors


@dataclass(frozen=True)
class ClockLines:
    tick_us: int  # the stamps' resolution: the largest step all of them are apart by a multiple of
    outside_ms: float  # how far the best line lies outside the round trip it misses most (0: inside all)
    ppm_low: float  # the rig's clock against the host's, ppm (+: it runs fast), over the lines that fit
    ppm_high: float

    @property
    def ppm(self) -> float:
        return (self.ppm_low + self.ppm_high) / 2


def clock_lines(samples: list[SyncSample]) -> ClockLines:
    """The best line through the samples' round trips, and the rates of those nearly as good. Needs two
    samples at different uptimes."""
    from scipy.optimize import linprog  # here, not at the top: every CLI command imports this module

    if len({s.mcu_us for s in samples}) < 2:
        raise ValueError("a clock's rate needs two PINGs at different uptimes")
    first = samples[0]
    tick_us = math.gcd(TICK_MAX_US, *(s.mcu_us - first.mcu_us for s in samples))
    x = np.array([(s.mcu_us - first.mcu_us) * 1e-6 for s in samples])  # MCU seconds
    x_next = x + tick_us * 1e-6  # the next tick: the line arrived before it
    low = np.array([(s.host_send - first.host_send) * 1e3 for s in samples])  # host ms
    high = np.array([(s.host_recv - first.host_send) * 1e3 for s in samples])
    # Variables: a (ms), d (ms per MCU s: 1e3 ppm host per MCU), e (ms). The line, a + 1000 x (1 + d/1000),
    # at the next tick no earlier than low - e and at the stamp no later than high + e, for every sample.
    ones = np.ones_like(x)
    rows = np.concatenate([np.column_stack([-ones, -x_next, -ones]), np.column_stack([ones, x, -ones])])
    bounds_rhs = np.concatenate([1e3 * x_next - low, high - 1e3 * x])
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
    return ClockLines(tick_us, outside, -d_high * 1e3, -d_low * 1e3)
