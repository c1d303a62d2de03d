"""The Zephyr firmware emulated in QEMU (qemu_cortex_m3): telemetry at 10 Hz over 10 simulated minutes
(frames, lost), and the control tick's jitter in real time, from the telemetry uptimes."""

from __future__ import annotations

import itertools
import os
import time

import numpy as np
from common import collect, figure, free_running_stretch

from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

MINUTES = 10
REALTIME_S = float(os.environ.get("BENCH_ZEPHYR_REALTIME_S", "60"))  # real-time stretch for the jitter


def accelerated() -> None:
    stretch = free_running_stretch(
        SimConfig(pacing=Pacing.accelerated(0), firmware="zephyr"), MINUTES, wall_limit_s=600
    )
    stretch.report()
    figure("wall time for the run (QEMU, flat out)", f"{stretch.wall_s:.1f} s", "")


def real_time() -> None:
    with SimulatedRig(SimConfig(firmware="zephyr")) as sim, RigLink(sim.port) as link:
        link.hello()
        link.start_keepalive()
        first = link.next_telemetry()
        frames = [first]
        deadline = time.monotonic() + REALTIME_S
        while time.monotonic() < deadline:
            frames += collect(link, 100, timeout=0.5)
    spacing = np.array([b.uptime_ms - a.uptime_ms for a, b in itertools.pairwise(frames)], dtype=float)
    jitter = spacing - 100.0
    figure(f"real time: frames in {REALTIME_S:.0f} s / lost", f"{len(frames)} / {link.stats.lost_frames}", "target 0")
    figure("tick spacing from telemetry uptimes: mean", f"{spacing.mean():.2f} ms", "100 ms")
    figure(
        "tick jitter: std / p99 |dev| / max |dev|",
        f"{jitter.std():.2f} / {np.percentile(abs(jitter), 99):.0f} / {abs(jitter).max():.0f} ms",
        "uptimes in ms",
    )


if __name__ == "__main__":
    accelerated()
    real_time()
