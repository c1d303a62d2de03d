"""Map MCU uptime to host UTC from PING exchanges: offset and drift fitted over a sliding window.

Each exchange gives (host send time, MCU stamp, host receive time). The MCU stamp was taken when the
frame arrived, between send and receive; the midpoint is the estimate and the round trip bounds its
error. Exchanges with the shortest round trips are the least disturbed, so the fit weights them.

A clock that does not run with the host's (a simulated rig paced by its plant) is described to the
sync by a `ClockPace`: its nominal rate against the host's and the step it advances by. Its stamps are
a staircase (the uptime a PING reads is the last tick's), so each exchange bounds the tick's host time
from both sides (it began before the reply came back, the next one after the request left) and the
fit intersects those bounds. When the pace changes (the simulation changes speed) the fit starts a
new segment from that moment: samples of the old pace are dropped and the old fit keeps stamping the
uptimes before the change. `stamp()` never runs backwards: a fit that moves back slews instead.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

MIN_SLEW = 0.5  # stamps advance at least this fraction of the fitted rate when a new fit moves back
MAX_PIECES = 64  # paces remembered for stamping uptimes read under them (a late frame after a change)


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

    def to_mcu(self, utc: float) -> int:
        return self.base_mcu_us + round((utc - self.base_utc) / self.rate * 1e6)

    @property
    def drift_ppm(self) -> float:
        return (self.rate - 1.0) * 1e6


@dataclass(frozen=True)
class ClockPace:
    """How an MCU clock that does not follow the host's runs (told by a simulation, never measured).
    rate: host seconds per MCU second (1 / the speed), None when unknown (as fast as possible);
    step_us: the uptime advances in steps of this many MCU microseconds (0: continuously)."""

    rate: float | None
    step_us: int


FREE = ClockPace(None, 0)  # a clock of its own (a real MCU, real-time simulation): measured, not told


@dataclass
class _Piece:
    """A stretch of uptime over which one pace held: from start_mcu_us on (until the next piece), the
    fit of that stretch. A fit carried over a pace change (prior) stamps until samples beat it."""

    start_mcu_us: int
    fit: ClockFit
    prior: ClockFit | None = None
    prior_error: float = 0.0  # the prior's error bound, host seconds
    changed_at: float | None = None  # host UTC of the pace change that began it, until a sample confirms its tick


class TimeSync:
    """Collects ping samples and keeps the current fit. Drift needs at least two seconds of spread.
    Thread-safe: pings add samples from one thread while a recorder stamps frames in another."""

    def __init__(self, window: int = 120, keep_fraction: float = 0.5, pace: ClockPace = FREE) -> None:
        self._samples: deque[SyncSample] = deque(maxlen=window)
        self._keep = keep_fraction
        self._lock = threading.Lock()
        self.pace = pace
        self.fit: ClockFit | None = None
        self._pieces: deque[_Piece] = deque(maxlen=MAX_PIECES)  # by uptime; the last one is being fitted
        self._since = -math.inf  # samples sent before this belong to an earlier pace
        self._last: tuple[int, float] | None = None  # the last stamp handed out
        self._bounds: tuple[int, float, float] | None = None  # a tick's uptime and its host time's bounds
        self._samples_seen: int | None = None  # the newest sample's uptime: on the grid of a stepped clock

    def restarted(self) -> TimeSync:
        """A fresh sync for a rebooted MCU (its uptime starts again), keeping what is known of its pace."""
        return TimeSync(self._samples.maxlen or 120, self._keep, self.pace)

    def add(self, sample: SyncSample) -> ClockFit | None:
        with self._lock:
            if sample.host_send >= self._since:  # a ping in flight across a pace change says nothing
                self._samples.append(sample)
                self._samples_seen = sample.mcu_us
                self._refit()
            return self.fit

    def set_pace(self, pace: ClockPace, at_utc: float) -> None:
        """The MCU's clock runs at `pace` from host time at_utc on (a simulated rig changed speed; the
        first sample after it reads the tick the change came at)."""
        with self._lock:
            old, self.pace = self.pace, pace
            if old == pace:
                return
            self._samples.clear()
            self._bounds = None
            self._since = at_utc
            fit = self.fit
            if fit is None:
                return
            # The change came at the tick the firmware had just processed: the old pace's tick nearest
            # to at_utc, on the grid of its stamps; else the first sample after it will say.
            start = fit.to_mcu(at_utc)
            if old.step_us and self._samples_seen is not None:
                grid = self._samples_seen
                start = grid + round((start - grid) / old.step_us) * old.step_us
            prior = None if pace.rate is None else ClockFit(start, fit.to_utc(start), pace.rate, fit.rtt_p50, 0)
            error = fit.rtt_p50 + old.step_us * 1e-6 * fit.rate
            self.fit = prior or fit
            self._pieces.append(_Piece(start, self.fit, prior, error, at_utc))

    # --- stamping -------------------------------------------------------------------------------

    def to_utc(self, mcu_us: int) -> float:
        """The fitted UTC of an uptime: the fit of the pace it was read under."""
        with self._lock:
            return self._to_utc(mcu_us)

    def _to_utc(self, mcu_us: int) -> float:
        return self._fit_of(mcu_us).to_utc(mcu_us)

    def _fit_of(self, mcu_us: int) -> ClockFit:
        assert self.fit is not None
        for piece in reversed(self._pieces):
            if mcu_us >= piece.start_mcu_us:
                return piece.fit
        return self._pieces[0].fit if self._pieces else self.fit

    def stamp(self, mcu_us: int) -> float:
        """UTC for a telemetry frame's uptime, never before an earlier frame's: where a new fit moved
        back, time runs on at MIN_SLEW of its rate until the fit catches up."""
        with self._lock:
            now = time.time()
            # A frame is stamped after it arrived: never in the future (a fit of too few samples, or of a
            # clock of unknown pace such as a stepped simulation's, can extrapolate past now).
            utc = min(max(self._to_utc(mcu_us), self._not_before(mcu_us)), now)
            if self._last is not None:
                last_mcu, last_utc = self._last
                if mcu_us <= last_mcu:
                    return utc
                rate = min(self._fit_of(last_mcu).rate, self._fit_of(mcu_us).rate)  # across a change: the slower
                floor = last_utc + (mcu_us - last_mcu) * 1e-6 * rate * MIN_SLEW
                utc = max(utc, min(floor, max(now, last_utc + 1e-6)))  # and that floor not past now either
            self._last = (mcu_us, utc)
            return utc

    def _not_before(self, mcu_us: int) -> float:
        """A stepped clock's tick came after every request that still read an earlier tick: when the
        plant served one late (a busy machine), the pings sent while it was due say how late."""
        if not self.pace.step_us:
            return -math.inf
        for s in reversed(self._samples):
            if s.mcu_us < mcu_us:
                return s.host_send
        return -math.inf

    # --- fitting --------------------------------------------------------------------------------

    def _refit(self) -> None:
        fit = self._least_rtt_fit() if self.pace == FREE else self._bounded_fit()
        self.fit = fit
        if self._pieces:
            self._pieces[-1].fit = fit
        else:
            self._pieces.append(_Piece(fit.base_mcu_us, fit))

    def _least_rtt_fit(self) -> ClockFit:
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
            rtt_p50=self._rtt_p50(),
            samples=len(self._samples),
        )

    def _rtt_p50(self) -> float:
        return float(np.median([s.rtt for s in self._samples]))

    def _rate(self) -> float:
        if self.pace.rate is not None:
            return self.pace.rate
        samples = list(self._samples)
        mcu = np.array([(s.mcu_us - samples[0].mcu_us) * 1e-6 for s in samples])
        if len(samples) >= 3 and float(mcu.max() - mcu.min()) >= 2.0:
            utc = np.array([s.host_mid - samples[0].host_mid for s in samples])
            return float(np.polyfit(mcu, utc, 1)[0])
        return self.fit.rate if self.fit is not None else 1.0

    def _bounded_fit(self) -> ClockFit:
        """The host time of the newest sample's tick, bounded by every sample since the pace last held
        (each says the tick began before its reply came back, and the next tick after its request
        left). When the newest disagrees with them (the plant fell behind and took a later pace), the
        newest samples that agree with each other start the bounds again, in a piece of their own."""
        rate = self._rate()
        step = self.pace.step_us * 1e-6
        base = self._samples[-1]
        piece = self._pieces[-1] if self._pieces else None
        if piece is not None and piece.changed_at is not None:
            # The first sample since a pace change reads the tick it came at if its reply was back before
            # the next tick of the new pace could come.
            if self.pace.rate is not None and base.host_recv - piece.changed_at < step * rate:
                before = self._pieces[-2].fit if len(self._pieces) > 1 else piece.fit
                piece.start_mcu_us = base.mcu_us
                if piece.prior is not None:
                    piece.prior = ClockFit(base.mcu_us, before.to_utc(base.mcu_us), rate, before.rtt_p50, 0)
            piece.changed_at = None
        lo, hi = base.host_send - rate * step, base.host_recv
        if self._bounds is not None and self.pace.rate is not None:
            ref_us, ref_lo, ref_hi = self._bounds
            shift = (base.mcu_us - ref_us) * 1e-6 * rate
            ref_lo, ref_hi = ref_lo + shift, ref_hi + shift
            if max(lo, ref_lo) <= min(hi, ref_hi):
                lo, hi = max(lo, ref_lo), min(hi, ref_hi)
            elif hi < ref_lo:
                # Earlier than the lower bounds said: a tick served late (a busy machine) raised them.
                # Upper bounds always hold: the interval keeps its width below the new one.
                lo, hi = max(lo, hi - (ref_hi - ref_lo)), hi
            elif lo - ref_hi < rate * step:
                # Later by less than a tick: this tick came late, the schedule did not move (the plant
                # takes a later one only when it falls two ticks behind). Its lower bound says nothing.
                lo, hi = ref_lo, ref_hi
            else:
                lo, hi = self._window_bounds(rate, step, base)
                if piece is not None and self.fit is not None:  # uptimes before keep the fit they had
                    self._pieces.append(_Piece(base.mcu_us, self.fit))
                    piece = self._pieces[-1]
        else:
            lo, hi = self._window_bounds(rate, step, base)
        self._bounds = (base.mcu_us, lo, hi)
        utc = (lo + hi) / 2
        if piece is not None and piece.prior is not None:
            # Right after a pace change the bounds are a tick wide: the fit carried over the change is
            # closer until they narrow below its own error.
            if hi - lo > 2 * piece.prior_error:
                utc = min(max(piece.prior.to_utc(base.mcu_us), lo), hi)
            else:
                piece.prior = None
        return ClockFit(base.mcu_us, utc, rate, self._rtt_p50(), len(self._samples))

    def _window_bounds(self, rate: float, step: float, base: SyncSample) -> tuple[float, float]:
        """The bounds on the host time of base's tick from the newest samples that agree."""
        lo, hi = -math.inf, math.inf
        for s in reversed(self._samples):
            x = (s.mcu_us - base.mcu_us) * 1e-6
            new_lo = max(lo, s.host_send - rate * (x + step))
            new_hi = min(hi, s.host_recv - rate * x)
            if new_lo > new_hi:  # an older pace of the plant (it fell behind and re-anchored)
                break
            lo, hi = new_lo, new_hi
        return lo, hi
