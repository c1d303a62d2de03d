"""One small virtual-drive campaign recorded for real (simulated rig, virtual 950 Pro, real fio, a
private influxd), once per test session, for the analysis, report and Grafana tests: 2 slots x 2 loaded
chassis profiles, 45 s of sequential write each (onsets of 5-32 s), cool-down loose. The equilibrium rule
is tight enough to say where each run starts: under 3 °C/min over 15 s, as it was, one run's equilibrium
stopped after 7.5 s at 59.2 °C where its condition settles at 48-50 °C, and the run read another onset
(a 15 s window cannot see a drive cooling over minutes: which recording stopped early was chance)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from influx_servers import copy_points
from influx_servers import env_for as influx_env_for

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux

NAME = "recorded-950pro"
RUNTIME_S = 45
CAMPAIGN = f"""\
[campaign]
name = "{NAME}"
seed = 7
baseline_s = 3

[rig]
port = "sim"
speed = 8

[drive]
target = "virtual"
profile = "950pro_512"
scale = 0.1

[equilibrium]
rate_c_per_min = 0.5
window_s = 60
timeout_s = 900
channels = ["chassis_air", "drive_ctrl"]

[cooldown]
margin_c = 3.0
timeout_s = 900

[factors]
slot = ["top", "underside"]
profile = ["single_gpu_load", "dual_gpu_load"]

[[workload]]
name = "seqwrite"
kind = "seq_write"
runtime_s = {RUNTIME_S}
"""


@dataclass(frozen=True)
class Recorded:
    name: str
    settings: InfluxSettings
    env: dict[str, str]  # for `thermrig ...` subprocesses: this server, private XDG dirs
    folder: Path  # the campaign's run folders
    output: str  # what `thermrig run` printed


def env_for(root: Path, settings: InfluxSettings) -> dict[str, str]:
    return {
        **os.environ,
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_RUNTIME_DIR": str(root / "run"),
        **influx_env_for(settings),
        "COLUMNS": "200",
    }


def record(root: Path, server: LocalInflux) -> Recorded:
    settings = server.settings()
    env = env_for(root, settings)
    path = root / "campaign.toml"
    path.write_text(CAMPAIGN)
    r = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", "run", str(path), "--no-prompt", "--out", str(root / "runs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return Recorded(NAME, settings, env, root / "runs", r.stdout)


def on_server(recorded: Recorded, root: Path, settings: InfluxSettings) -> Recorded:
    """The same campaign on another server: every point the recording's server holds copied into it, read
    with its own user state (root) and credentials; the run folders and what `thermrig run` printed kept."""
    copy_points(recorded.settings, settings, root)
    return dataclasses.replace(recorded, settings=settings, env=env_for(root, settings))
