"""A simulated rig runs at the campaign's speed while the host watches it and at 1x between watches
(campaign.watch_pace), on a real simulated rig (rigsim): the pace its plant serves the firmware at."""

from __future__ import annotations

import pytest

from thermrig.campaign.watch_pace import BETWEEN_WATCHES, WatchPace
from thermrig.dut.pacing import Pacing
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig


def test_the_campaigns_speed_while_watched_and_real_time_between() -> None:
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(8.0))) as sim:
        pace = WatchPace(sim)
        assert sim.server is not None
        with pace.watching():
            assert sim.pacing == Pacing.accelerated(8.0) and sim.server.speed == 8.0  # the plant's own pace
        assert sim.pacing == BETWEEN_WATCHES and sim.server.speed == 1.0
        with pytest.raises(RuntimeError, match="under the watch"), pace.watching():
            raise RuntimeError("under the watch")
        assert sim.pacing == BETWEEN_WATCHES


@pytest.mark.parametrize("pacing", [Pacing.realtime(), Pacing.stepped(), Pacing.accelerated(1.0)])
def test_a_rig_whose_pace_is_the_campaigns_already_is_left_alone(pacing: Pacing) -> None:
    with SimulatedRig(SimConfig(pacing=pacing)) as sim:
        with WatchPace(sim).watching():
            pass
        assert sim.pacing == pacing
    with WatchPace(None).watching():  # a real rig
        pass
