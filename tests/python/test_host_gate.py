"""A simulation faster than real time waits for its host (thermrig.sim.host_gate): a host silent for less
than a real rig's host timeout of wall time holds the plant instead of losing the rig, and a host silent
for longer is lost as on the bench, no sooner. The testbed heats a 10x simulated rig with no keepalive:
every frame the rig hears is one this test sends."""

from __future__ import annotations

import time

from waiting import wait_for

from thermrig.dut.pacing import Pacing
from thermrig.protocol.limits import HOST_TIMEOUT_S
from thermrig.protocol.messages import Fault
from thermrig.sim.host_gate import GATE_S
from thermrig.sim.wires import TICK_S
from thermrig.testbed import SimulatedRigSpec, open_testbed

SPEED = 10.0
STALL_S = 1.0  # a host stall of real time: ten MCU seconds at 10x, a third of what a real rig allows


def test_a_host_silent_for_less_than_a_real_rig_allows_holds_the_plant_and_keeps_its_rig() -> None:
    with open_testbed(SimulatedRigSpec(Pacing.accelerated(SPEED)), keepalive=False) as bed:
        sim, link = bed.sim, bed.link
        frames = link.subscribe()
        link.set(air=6000, hlim=1000, heat=1, fan0=300, fan1=300)
        assert wait_for(lambda: sim.actuators()[0] > 0, 30)
        link.ping()  # the host's last word before it stalls
        last_word = sim.virtual_time
        time.sleep(STALL_S)  # the stall itself: no frame for that much real time
        held = sim.virtual_time - last_word
        assert held <= GATE_S + 2 * TICK_S, f"the plant ran {held:.1f} s past the host's last frame"
        assert sim.server.host_gate.holds > 0
        for _ in range(20):  # the host back on time: the plant goes on, pinged every MCU second
            before = sim.virtual_time
            link.ping()
            assert wait_for(lambda b=before: sim.virtual_time >= b + 1.0, 30)
        assert sim.virtual_time - last_word > 10 * GATE_S  # it went on after the stall
        seen = [frames.get_nowait() for _ in range(frames.qsize())]
        assert seen and seen[-1].heat_enabled
        assert not [f for f in seen if f.faults], "the rig latched a fault for a host a real rig would still hear"


def test_a_host_silent_for_longer_than_a_real_rig_allows_is_lost() -> None:
    with open_testbed(SimulatedRigSpec(Pacing.accelerated(SPEED)), keepalive=False) as bed:
        sim, link = bed.sim, bed.link
        link.set(air=6000, hlim=1000, heat=1, fan0=300, fan1=300)
        assert wait_for(lambda: sim.actuators()[0] > 0, 30)
        silent_from = time.monotonic()  # the host's last frame goes out after this
        link.ping()
        assert wait_for(lambda: link.latest is not None and bool(link.latest.faults & Fault.HOST_LOST), 60)
        assert time.monotonic() - silent_from >= HOST_TIMEOUT_S  # as long as a real rig waits, no less
        assert wait_for(lambda: sim.actuators()[0] == 0, 30)  # and the rig went safe by itself
