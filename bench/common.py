"""Shared helpers for the benchmarks: run a stepped simulation with a live host, print a figure line."""

from __future__ import annotations

import time

from thermrig.link.rig_link import RigLink
from thermrig.plant.simulated_rig import SimulatedRig


def figure(name: str, value: str, target: str = "") -> None:
    print(f"  {name:<58} {value:>22}  {target}")


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
