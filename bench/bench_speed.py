"""Accelerated simulation speed: one simulated hour, stepped with a host heartbeat and free-running."""

from __future__ import annotations

import time

from common import advance_with_host, figure

from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

HOUR_S = 3600


def main() -> None:
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        link.set(air=4000, heat=1, fan0=400)
        start = time.monotonic()
        advance_with_host(sim, link, HOUR_S)
        wall = time.monotonic() - start
    figure("1 simulated hour, stepped, ping every simulated second", f"{wall:.1f} s = {HOUR_S / wall:.0f}x", "")
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(0))) as sim, RigLink(sim.port) as link:
        link.hello()
        start = time.monotonic()
        while sim.virtual_time < HOUR_S and time.monotonic() - start < 120:
            link.drain_telemetry()
            time.sleep(0.05)
        wall = time.monotonic() - start
        virtual = sim.virtual_time
    figure("free-running, host reading 10 Hz telemetry", f"{virtual / wall:.0f}x real time", "target >= 100x")


if __name__ == "__main__":
    main()
