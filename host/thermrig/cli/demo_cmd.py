"""`thermrig demo`: the main job on the embedded default, what `make demo` runs: the local InfluxDB, the
packaged demo campaign (examples/demo-virtual-950pro.toml: the simulated rig with the virtual Samsung 950
Pro, 2 slots x 2 chassis profiles, sequential writes), then its throttle table read back from InfluxDB
beside the published numbers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from thermrig.cli import campaign_cmds, db_cmds, throttle_cmd
from thermrig.cli.user_errors import user_errors
from thermrig.errors import ThermrigError
from thermrig.paths import packaged

CAMPAIGN = "demo-virtual-950pro"


@user_errors
def demo(
    out: Annotated[
        Path | None, typer.Option(help="Campaign folder (default: ./thermrig-runs/demo-<UTC start>).")
    ] = None,
) -> None:
    """The main job on the simulated rig: a four-run throttling campaign on the virtual 950 Pro, recorded
    into the local InfluxDB (left running), then each run's onset and depth beside Puget's."""
    campaign = packaged("examples") / f"{CAMPAIGN}.toml"
    if not campaign.is_file():
        raise ThermrigError(f"no demo campaign at {campaign}: this installation lacks the package's data; reinstall it")
    folder = out or Path("thermrig-runs") / datetime.now(UTC).strftime("demo-%Y%m%dT%H%M%S")
    db_cmds.up()
    campaign_cmds.run(campaign, out=folder, no_prompt=True)
    throttle_cmd.throttle(CAMPAIGN, compare=True, runs_from=folder)
    Console().print("InfluxDB keeps running for Grafana and queries; `thermrig db down` stops it.")
