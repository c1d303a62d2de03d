"""Reading a telemetry subscription (RigLink.subscribe) at the rig's present."""

from __future__ import annotations

import contextlib
import queue

from thermrig.protocol.messages import Telemetry


def newest(q: queue.Queue[Telemetry], last: Telemetry) -> Telemetry:
    """Every frame already queued read, the newest returned (`last` when none is): the rig's present,
    not a frame a busy host has yet to read. A procedure calls it before it acts, so that a window it
    counts in rig time from the frame it returns starts when it acted."""
    with contextlib.suppress(queue.Empty):
        while True:
            last = q.get_nowait()
    return last
