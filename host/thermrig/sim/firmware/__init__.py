"""Firmware launchers: one module per firmware the simulated rig can run against the plant. Each
module has `launch(ctx) -> Firmware`; a new firmware adds its module and one line below."""

from __future__ import annotations

import importlib

from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError

# name -> module in this package; imported on use, so a firmware's tools are needed only when it runs
FIRMWARES: dict[str, str] = {
    "rigsim": "rigsim",
    "zephyr": "zephyr",
    "micropython": "micropython",
}


def launch(name: str, ctx: LaunchContext) -> Firmware:
    if name not in FIRMWARES:
        raise SimError(f"unknown firmware {name!r}; choose one of {', '.join(FIRMWARES)}")
    module = importlib.import_module(f"{__name__}.{FIRMWARES[name]}")
    return module.launch(ctx)
