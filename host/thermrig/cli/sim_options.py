"""The options a command that can run on a fresh simulated rig (`--sim`) shares: which firmware it runs,
and which image of it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from thermrig.dut.simulation import FIRMWARES

SimFirmwareOpt = Annotated[
    str, typer.Option(help=f"With --sim, the firmware the simulated rig runs: {', '.join(FIRMWARES)}.")
]
SimImageOpt = Annotated[
    Path | None,
    typer.Option(help="With --sim, the firmware's image (e.g. a board build with a miswiring overlay)."),
]
