"""Shared helpers for the benchmarks: run a stepped simulation with a live host, print a figure line."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Telemetry
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig


def figure(name: str, value: str, target: str = "") -> None:
    print(f"  {name:<58} {value:>22}  {target}")


@contextmanager
def burners(n: int) -> Iterator[None]:
    """n processes spinning on a core each, as other work on the machine would."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def advance_with_host(sim: SimulatedRig, link: RigLink, seconds: float, on_second=None) -> None:  # type: ignore[no-untyped-def]
    """Advance virtual time a second at a time, pinging between seconds as a live host's heartbeat."""
    for i in range(round(seconds)):
        link.ping()
        sim.advance(1.0)
        if on_second is not None:
            on_second(i + 1)


def collect(link: RigLink, count: int, timeout: float = 5.0) -> list:  # type: ignore[type-arg]
    frames: list = []  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while len(frames) < count and time.monotonic() < deadline:
        frames += link.drain_telemetry()
        time.sleep(0.002)
    return frames


@dataclass(frozen=True)
class Stretch:
    """Telemetry of a stretch of simulated minutes: every frame (the first included) and the link's counts."""

    minutes: int
    frames: list[Telemetry]
    lost: int  # rig sequence gaps
    bad: int  # frames that did not decode
    wall_s: float

    def report(self) -> None:
        """The frames inside the stretch against the 10 Hz expected, the lost and the bad ones."""
        first = self.frames[0]
        window = [f for f in self.frames if f.uptime_ms - first.uptime_ms < self.minutes * 60_000]
        figure(f"telemetry frames in {self.minutes} simulated min (expected {self.minutes * 600})", f"{len(window)}")
        figure("lost frames (rig sequence gaps)", f"{self.lost}", "target 0")
        figure("bad frames received", f"{self.bad}", "target 0")


def free_running_stretch(config: SimConfig, minutes: int, wall_limit_s: float) -> Stretch:
    """`minutes` of 10 Hz telemetry from a rig simulated flat out (Pacing.accelerated(0)): the pty carries
    simulated time as fast as the machine goes, a harder test of the link than real time."""
    with SimulatedRig(config) as sim, RigLink(sim.port) as link:
        link.hello()
        frames = [link.next_telemetry()]
        start = time.monotonic()
        while len(frames) < minutes * 600 + 1 and time.monotonic() - start < wall_limit_s:
            frames += collect(link, 1000, timeout=0.5)
        wall = time.monotonic() - start
    return Stretch(minutes, frames, link.stats.lost_frames, sum(link.stats.decode_errors.values()), wall)
