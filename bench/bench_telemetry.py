"""Telemetry at 10 Hz over 10 simulated minutes: frames expected, received, lost (sequence gaps)."""

from __future__ import annotations

import time

from common import collect, figure

from thermrig.link.rig_link import RigLink
from thermrig.plant.simulated_rig import SimConfig, SimulatedRig

MINUTES = 10


def main() -> None:
    # Free-running accelerated simulation: the pty carries 10 Hz of simulated time as fast as the
    # machine goes, a harder test of the link than real time.
    with SimulatedRig(SimConfig(speed=0)) as sim, RigLink(sim.port) as link:
        link.hello()
        first = link.next_telemetry()
        start = time.monotonic()
        frames = [first]
        want = MINUTES * 60 * 10
        while len(frames) < want + 1 and time.monotonic() - start < 120:
            frames += collect(link, 1000, timeout=0.5)
        wall = time.monotonic() - start
    span = frames[-1].uptime_ms - first.uptime_ms
    window = [f for f in frames if f.uptime_ms - first.uptime_ms < MINUTES * 60_000]
    figure(f"telemetry frames in {MINUTES} simulated min (expected {want})", f"{len(window)}")
    figure("lost frames (rig sequence gaps)", f"{link.stats.lost_frames}", "target 0")
    figure("bad frames received", f"{sum(link.stats.decode_errors.values())}", "target 0")
    figure("telemetry rate", f"{len(frames) / (span / 1000):.2f} Hz (simulated)", "")
    figure("wall time for the run", f"{wall:.1f} s", "")


if __name__ == "__main__":
    main()
