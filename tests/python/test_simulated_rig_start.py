"""The simulated rig starts its threads and processes in start() (or `with`), not in its constructor,
and a start that fails half-way leaves nothing running."""

from __future__ import annotations

import threading

import pytest

from thermrig.dut.pacing import Pacing
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig


def test_a_failed_start_leaves_nothing_running() -> None:
    before = set(threading.enumerate())
    # The plant server starts first; the virtual drive then refuses a wire scale above 1.
    rig = SimulatedRig(SimConfig(pacing=Pacing.accelerated(0), drive="950pro_512", drive_scale=2.0))
    assert set(threading.enumerate()) == before  # the constructor started nothing
    with pytest.raises(ValueError, match="wire scale"):
        rig.start()
    assert rig.server is None and rig.drive is None and rig.firmware is None
    assert [t.name for t in threading.enumerate() if t not in before and t.is_alive()] == []


def test_pacing_is_one_value() -> None:
    assert Pacing.of_speed(1) == Pacing.realtime() and Pacing.of_speed(1).plant_speed is None
    assert Pacing.of_speed(10).plant_speed == 10 and Pacing.stepped().plant_speed == 0
    assert Pacing.accelerated(0).describe() == "as fast as possible"
    with pytest.raises(ValueError, match=r"0 .* or more"):
        Pacing.accelerated(-1)
