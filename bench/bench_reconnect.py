"""Reconnect after a simulated USB unplug, real time: outage as the host saw it, and time from the
device's return to a working link (reopened and handshaken)."""

from __future__ import annotations

import os
import time

from common import figure

from thermrig.link.rig_link import RigLink
from thermrig.sim.fault_injection import FaultKind
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

UNPLUG_S = 2.0
ROUNDS = 5


def main() -> None:
    after_return, outages = [], []
    with SimulatedRig(SimConfig()) as sim, RigLink(sim.port) as link:
        link.hello()
        for i in range(ROUNDS):
            before = link.info  # each handshake's reply is a new RigInfo: the one after the replug is not this
            sim.faults.inject(FaultKind.USB_UNPLUG, value=UNPLUG_S)
            while os.path.exists(sim.port):
                time.sleep(0.001)
            while not os.path.exists(sim.port):
                time.sleep(0.001)
            back = time.time()
            while link.stats.reconnects <= i or link.info is before:
                time.sleep(0.001)
            link.ping()  # handshaken and answering
            ready = time.time()
            lost = next(e for e in reversed(link.events) if e.kind == "link_lost")
            after_return.append(ready - back)
            outages.append(ready - lost.utc)
            time.sleep(0.5)
    figure(
        f"device back -> link working ({ROUNDS} unplugs of {UNPLUG_S:g} s)",
        f"max {max(after_return):.3f} s",
        f"mean {sum(after_return) / ROUNDS:.3f} s",
    )
    figure("outage seen by the host (unplug to working link)", f"max {max(outages):.2f} s")


if __name__ == "__main__":
    main()
