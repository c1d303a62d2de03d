"""Map MCU uptime to host UTC from PING exchanges: offset and drift fitted over a sliding window.

Each exchange gives (host send time, MCU stamp, host receive time). The MCU stamp was taken when the
frame arrived, between send and receive; the midpoint is the estimate and the round trip bounds its
error. Exchanges with the shortest round trips are the least disturbed, so the fit weights them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SyncSample:
    host_send: float  # host UTC, s
    mcu_us: int  # MCU uptime at receipt, us
    host_recv: float  # host UTC, s

    @property
    def rtt(self) -> float:
        return self.host_recv - self.host_send

    @property
    def host_mid(self) -> float:
        return (self.host_send + self.host_recv) / 2.0


@dataclass(frozen=True)
class ClockFit:
    """utc = base_utc + (mcu_us - base_mcu_us) * 1e-6 * rate."""

    base_mcu_us: int
    base_utc: float
    rate: float  # host seconds per MCU second (1 + drift)
    rtt_p50: float
    samples: int

    def to_utc(self, mcu_us: int) -> float:
        return self.base_utc + (mcu_us - self.base_mcu_us) * 1e-6 * self.rate

    @property
    def drift_ppm(self) -> float:
        return (self.rate - 1.0) * 1e6


class TimeSync:
    """Collects ping samples and keeps the current fit. Drift needs at least two seconds of spread."""

    def __init__(self, window: int = 120, keep_fraction: float = 0.5) -> None:
        self._samples: deque[SyncSample] = deque(maxlen=window)
        self._keep = keep_fraction
        self.fit: ClockFit | None = None

    def add(self, sample: SyncSample) -> ClockFit:
        self._samples.append(sample)
        self.fit = self._refit()
        return self.fit

    def _refit(self) -> ClockFit:
        samples = sorted(self._samples, key=lambda s: s.rtt)
        best = samples[: max(1, int(len(samples) * self._keep))]
        base = best[0]
        mcu = np.array([(s.mcu_us - base.mcu_us) * 1e-6 for s in best])
        utc = np.array([s.host_mid - base.host_mid for s in best])
        rate = 1.0
        if len(best) >= 3 and float(mcu.max() - mcu.min()) >= 2.0:
            rate, _ = np.polyfit(mcu, utc, 1)
        # Offset: the mean residual of the retained samples around the fitted slope.
        offset = float(np.mean(utc - rate * mcu))
        return ClockFit(
            base_mcu_us=base.mcu_us,
            base_utc=base.host_mid + offset,
            rate=float(rate),
            rtt_p50=float(np.median([s.rtt for s in self._samples])),
            samples=len(self._samples),
        )
