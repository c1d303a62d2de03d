"""A kind of testbed: whatever gives the rig's end (where its link opens, the drive under test, the
simulation's control if any, identity and tags) once started; open_testbed does the rest the same way for
every kind. A kind is any object with `open(stack)`: a lab registers its places so, unknown here."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from thermrig.dut.drive import DriveUnderTest
from thermrig.dut.simulation import SimulationControl
from thermrig.protocol.messages import RigInfo

Identity = dict[str, str | None]


def no_tags(info: RigInfo) -> dict[str, str]:
    return {}


@dataclass
class RigEnd:
    """What a kind started: the rig's port, the drive under test (None: none needed, e.g. `rig tune`),
    the simulated rig when simulated (the simulator itself: procedures reach it as a SimulationControl,
    the commands that play its plant as what it is), the drive's identity for the manifest, the tags every
    point carries once the rig said HELLO, the heartbeat's pace (None: real time), and whether the
    simulation is stepped (virtual time advanced by the procedure: Testbed.run, no heartbeat thread)."""

    name: str
    port: str
    drive: DriveUnderTest | None = None
    sim: SimulationControl | None = None
    identity: Identity = field(default_factory=dict)
    tags: Callable[[RigInfo], dict[str, str]] = no_tags
    speed: float | None = None
    stepped: bool = False


class Kind(Protocol):
    def open(self, stack: contextlib.ExitStack) -> RigEnd:
        """Start what the rig's end needs, closed with `stack`; errors as ThermrigError, in one line."""
        ...
