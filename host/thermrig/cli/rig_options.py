"""The options every command that talks to a rig shares: where the rig answers, and its pace when it is a
simulation running elsewhere."""

from __future__ import annotations

from typing import Annotated

import typer

PortOpt = Annotated[
    str | None,
    typer.Option(
        "--port",
        "-p",
        help="Serial device or pyserial URL (socket://host:port, rfc2217://...). Default: $THERMRIG_PORT, "
        "[rig] port in the config file, or a running `thermrig sim`.",
    ),
]
SpeedOpt = Annotated[
    float | None, typer.Option(help="The rig is `thermrig sim --speed N`: its speed, for the heartbeat.")
]
