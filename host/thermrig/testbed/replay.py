"""The simulator's plant and drive model, replayed without rig or fio: what the calibration fits, handed
to it through thermrig.dut.replay's protocol."""

from __future__ import annotations

from thermrig.dut.replay import ModelReplay
from thermrig.sim import replay as plant_replay


def model_replay() -> ModelReplay:
    return plant_replay
