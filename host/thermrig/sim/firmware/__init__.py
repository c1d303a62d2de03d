"""Firmware launchers: one module per firmware the simulated rig can run against the plant. Each
module, named as the firmware (a hyphen in the firmware's name is an underscore in the module's), has
`launch(ctx) -> Firmware`; a new firmware adds its module and its name to thermrig.dut.simulation.FIRMWARES
(which campaign files are checked against)."""

from __future__ import annotations

import importlib

from thermrig.dut.simulation import FIRMWARES
from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError

__all__ = ["FIRMWARES", "launch"]


def launch(name: str, ctx: LaunchContext) -> Firmware:
    if name not in FIRMWARES:
        raise SimError(f"unknown firmware {name!r}; choose one of {', '.join(FIRMWARES)}")
    # On use: a firmware's tools are needed only when it runs.
    module = importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
    return module.launch(ctx)
