"""What a test runs on, built once: a rig greeted over its link (HELLO, the protocol and version checked),
its heartbeat at the rig's pace, the time sync told where a simulation changes pace, the drive under
test, the simulation's control when simulated, and what identifies it (the drive's identity, the tags
every point carries). `open_testbed(spec)` opens one and leaves the rig safe on every exit: a normal
one, an exception, SIGINT and SIGTERM (session.py). The kinds: a rig on a port (`LocalRig`), a simulated
rig started here (`SimulatedRigSpec`), and any kind that gives the rig's end (`RigEnd`) itself, as the lab
gives a place (thermrig.lab.place_testbed): this package does not know the lab."""

from thermrig.testbed.kinds import Kind, RigEnd
from thermrig.testbed.local import LocalDriveSpec, LocalRig
from thermrig.testbed.session import Testbed, TestbedError, open_testbed
from thermrig.testbed.simulated import SimulatedRigSpec

__all__ = [
    "Kind",
    "LocalDriveSpec",
    "LocalRig",
    "RigEnd",
    "SimulatedRigSpec",
    "Testbed",
    "TestbedError",
    "open_testbed",
]
