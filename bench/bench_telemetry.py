"""Telemetry at 10 Hz over 10 simulated minutes: frames expected, received, lost (sequence gaps)."""

from __future__ import annotations

from common import figure, free_running_stretch

from thermrig.dut.pacing import Pacing
from thermrig.sim.simulated_rig import SimConfig

MINUTES = 10


def main() -> None:
    stretch = free_running_stretch(SimConfig(pacing=Pacing.accelerated(0)), MINUTES, wall_limit_s=120)
    stretch.report()
    span = stretch.frames[-1].uptime_ms - stretch.frames[0].uptime_ms
    figure("telemetry rate", f"{len(stretch.frames) / (span / 1000):.2f} Hz (simulated)", "")
    figure("wall time for the run", f"{stretch.wall_s:.1f} s", "")


if __name__ == "__main__":
    main()
