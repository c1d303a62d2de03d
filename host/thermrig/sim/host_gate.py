"""HostGate: a simulation faster than real time never asks its host to be more punctual than a real rig.

The firmware counts its host timeout (HOST_TIMEOUT_S) in its own seconds, so at 10x real time a host
has 0.3 s of wall time between frames where a rig on the bench gives it 3 s. On a busy machine a Python
host's keepalive can wait that long for the CPU and the interpreter while the plant, which needs less,
goes on, and the rig latches HOST_LOST for a host a real rig would still hear. So the plant waits for
its host, as a stepped simulation pings between its steps: it serves no tick more than GATE_S of MCU time
past the host's last frame until the host writes again, or HOST_TIMEOUT_S of wall time has passed since
it last did (a host really gone: the rig latches HOST_LOST no sooner than a rig on the bench, and at most
GATE_S of MCU time after that). It knows the host only where the host's link tells it
(`SimulatedRig.follow_host`, which a testbed on an in-process simulated rig calls); a rig served to
another machine goes on as before."""

from __future__ import annotations

import threading
import time

from thermrig.protocol.limits import HOST_TIMEOUT_S

# MCU seconds past the host's last frame: half the host timeout, three keepalives at N x real time
# (RigLink pings six times per timeout there), so a host on time never holds the plant.
GATE_S = HOST_TIMEOUT_S / 2


class HostGate:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heard: tuple[float, float] | None = None  # the host's last frame: plant time (s), monotonic
        self._closed = False
        self.holds = 0  # ticks the plant waited for its host

    def heard(self, plant_t: float) -> None:
        """The host wrote a frame to the rig while the plant was at plant_t."""
        with self._cond:
            self._heard = (plant_t, time.monotonic())
            self._cond.notify_all()

    def wait(self, next_t: float) -> bool:
        """Before the plant serves the tick that takes it to next_t: wait while that would be more than
        GATE_S past the host's last frame and the host has been silent less than HOST_TIMEOUT_S of wall
        time. True when it waited (the caller re-anchors its pace: the pause was the host's)."""
        with self._cond:
            heard = self._heard
            if heard is None or next_t - heard[0] <= GATE_S:
                return False
            deadline = heard[1] + HOST_TIMEOUT_S
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.holds += 1
            self._cond.wait_for(lambda: self._heard is not heard or self._closed, left)
            return True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
