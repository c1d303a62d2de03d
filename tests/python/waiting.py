"""Waiting for what a test means instead of sleeping: a condition polled until it holds or time runs out
(thermrig.children.wait_for), and the stepped rig's frames read after an advance."""

from __future__ import annotations

from thermrig.children import wait_for
from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Telemetry
from thermrig.sim.simulated_rig import SimulatedRig

__all__ = ["advance_and_read", "wait_for"]


def advance_and_read(sim: SimulatedRig, link: RigLink, seconds: float = 1.0, hz: int = 10) -> Telemetry:
    """The stepped rig advanced, and its frames of those seconds read by the link (waited for up to 10 s:
    they are on the line when advance returns, the link's reader not yet through them): the newest."""
    seq = link.latest.seq if link.latest is not None else -1
    sim.advance(seconds)
    assert wait_for(lambda: link.latest is not None and link.latest.seq >= seq + round(seconds * hz)), (
        f"the link did not read the {seconds:g} s advance's frames"
    )
    assert link.latest is not None
    return link.latest
