"""Thermal equilibrium and cool-down, judged on the rig's telemetry (rig time, so any sim speed).

Two rules (`[equilibrium] rule`): "trend", every channel's least-squares slope over the last window_s
below rate_c_per_min (the original rule, EquilibriumWatch); "fit", every channel's exponential fit
over the last window_s predicting a remaining change to its final value within the drift the trend
rule accepts over one window, rate_c_per_min x window_s (FitWatch): it judges from half a window on
and stops as soon as the curve says the rest is within that, instead of waiting for a window whose
slope is flat; where the approach is slow it waits longer than the trend rule, for a start closer to
the final value."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from thermrig.campaign.spec import CampaignError, Equilibrium
from thermrig.protocol.channels import ChannelMap
from thermrig.protocol.messages import Telemetry

COOLDOWN_CHANNEL = "drive_ctrl"  # the baseline and the cool-down are judged on the drive's controller
FIT_TAUS_S = np.geomspace(5.0, 3600.0, 80)  # the time constants the fit tries
FIT_MIN_SPAN = 0.5  # the fit judges once it has this fraction of window_s of telemetry


def check_channels(rule: Equilibrium, channels: ChannelMap) -> None:
    """The campaign's channels against the map the rig declared in HELLO, before anything runs."""
    missing = [ch for ch in (*rule.channels, COOLDOWN_CHANNEL) if ch not in channels.names]
    if missing:
        raise CampaignError(
            f"the rig has no channel {', '.join(missing)}: its channels are {', '.join(channels.names)}"
        )


@dataclass
class EquilibriumWatch:
    """Every channel's linear trend over the last window below the rate limit."""

    rule: Equilibrium
    samples: deque[Telemetry] = field(default_factory=deque)

    def add(self, tel: Telemetry) -> None:
        self.samples.append(tel)
        while self.samples and tel.uptime_ms - self.samples[0].uptime_ms > self.rule.window_s * 1000:
            self.samples.popleft()

    def rates_c_per_min(self) -> dict[str, float]:
        t = np.array([s.uptime_ms / 60000.0 for s in self.samples])
        out = {}
        for ch in self.rule.channels:
            values = np.array([s.named(ch).value for s in self.samples])
            out[ch] = float(np.polyfit(t, values, 1)[0]) if len(values) >= 3 else float("inf")
        return out

    def reached(self) -> bool:
        if (
            not self.samples
            or (self.samples[-1].uptime_ms - self.samples[0].uptime_ms) < 0.95 * self.rule.window_s * 1000
        ):
            return False
        return all(abs(r) < self.rule.rate_c_per_min for r in self.rates_c_per_min().values())

    def tail_mean(self, channel: str, seconds: float) -> float | None:
        """The channel's mean over the last `seconds` held, when that much is held (a settled tail)."""
        return tail_mean(self.samples, channel, seconds)


@dataclass(frozen=True)
class ExpFit:
    """y(t) = final + excess * exp(-(t - now) / tau_s): the channel's fitted course, `now` its last sample."""

    final: float
    excess: float  # the change still to come, with its sign reversed: y(now) - final
    tau_s: float
    rms: float  # residual

    @property
    def remaining_c(self) -> float:
        return abs(self.excess)


def exp_fit(t_s: np.ndarray, y: np.ndarray) -> ExpFit:
    """The best single exponential through the points: for each time constant of FIT_TAUS_S the final
    value and the excess by least squares (the normal equations, every time constant at once), the time
    constant with the least residual kept."""
    e = np.exp(-(t_s - t_s[-1])[:, None] / FIT_TAUS_S[None, :])  # points x time constants; 1 now
    n, se, see = len(y), e.sum(0), (e * e).sum(0)
    sy, sey = y.sum(), (e * y[:, None]).sum(0)
    det = n * see - se * se
    ok = det > 1e-12 * n * n
    det = np.where(ok, det, 1.0)
    excess = np.where(ok, (n * sey - se * sy) / det, 0.0)
    final = np.where(ok, (sy - excess * se) / n, y.mean())
    rms = np.sqrt(np.mean((final[None, :] + excess[None, :] * e - y[:, None]) ** 2, axis=0))
    i = int(np.argmin(rms))
    return ExpFit(float(final[i]), float(excess[i]), float(FIT_TAUS_S[i]), float(rms[i]))


@dataclass
class FitWatch:
    """Every channel's exponential fit over the last window_s predicting that the channel will change
    by no more than rate_c_per_min x window_s from here on (fitted again once a rig second)."""

    rule: Equilibrium
    samples: deque[Telemetry] = field(default_factory=deque)
    _fits: dict[str, ExpFit] | None = None
    _fitted_ms: int = -(10**12)

    @property
    def tolerance_c(self) -> float:
        return self.rule.rate_c_per_min * self.rule.window_s / 60.0

    def add(self, tel: Telemetry) -> None:
        self.samples.append(tel)
        while self.samples and tel.uptime_ms - self.samples[0].uptime_ms > self.rule.window_s * 1000:
            self.samples.popleft()
        if tel.uptime_ms - self._fitted_ms >= 1000:
            self._fits = None

    def span_s(self) -> float:
        return (self.samples[-1].uptime_ms - self.samples[0].uptime_ms) / 1000 if self.samples else 0.0

    def fits(self) -> dict[str, ExpFit]:
        if self._fits is None:
            t = np.array([s.uptime_ms / 1000.0 for s in self.samples])
            values = {ch: np.array([s.named(ch).value for s in self.samples]) for ch in self.rule.channels}
            self._fits = {ch: exp_fit(t, y) for ch, y in values.items()}
            self._fitted_ms = self.samples[-1].uptime_ms
        return self._fits

    def remaining_c(self) -> dict[str, float]:
        if len(self.samples) < 5:
            return {ch: float("inf") for ch in self.rule.channels}
        return {ch: f.remaining_c for ch, f in self.fits().items()}

    def rates_c_per_min(self) -> dict[str, float]:
        """The fitted slope now, for the display and the manifest."""
        if len(self.samples) < 5:
            return {ch: float("inf") for ch in self.rule.channels}
        return {ch: -60.0 * f.excess / f.tau_s for ch, f in self.fits().items()}

    def reached(self) -> bool:
        if self.span_s() < FIT_MIN_SPAN * self.rule.window_s:
            return False
        tol = self.tolerance_c
        # a fit that misses the points by more than the tolerance predicts nothing
        return all(f.remaining_c <= tol and f.rms <= tol for f in self.fits().values())

    def tail_mean(self, channel: str, seconds: float) -> float | None:
        return tail_mean(self.samples, channel, seconds)


Watch = EquilibriumWatch | FitWatch


def watch_for(rule: Equilibrium) -> Watch:
    return FitWatch(rule) if rule.rule == "fit" else EquilibriumWatch(rule)


def tail_mean(samples: deque[Telemetry], channel: str, seconds: float) -> float | None:
    """The channel's mean over the last `seconds` of samples, or None when they span less."""
    if not samples or (samples[-1].uptime_ms - samples[0].uptime_ms) < seconds * 1000 * 0.95:
        return None
    since = samples[-1].uptime_ms - seconds * 1000
    values = [s.named(channel).value for s in samples if s.uptime_ms >= since]
    return float(np.mean(values))
