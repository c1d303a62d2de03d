"""Thermal equilibrium and cool-down, judged on the rig's telemetry (rig time, so any sim speed)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from thermrig.campaign.spec import CampaignError, Equilibrium
from thermrig.protocol.channels import ChannelMap
from thermrig.protocol.messages import Telemetry

COOLDOWN_CHANNEL = "drive_ctrl"  # the baseline and the cool-down are judged on the drive's controller


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
