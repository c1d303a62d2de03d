"""A campaign on the Zephyr firmware emulated in QEMU ([rig] firmware = "zephyr"): the plant, the
virtual drive under the real fio and InfluxDB, exactly as on rigsim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from thermrig.db.query import influxql
from thermrig.db.settings import InfluxSettings

CAMPAIGN = """\
[campaign]
name = "{name}"
seed = 3
baseline_s = 3

[rig]
port = "sim"
speed = 10
firmware = "{firmware}"

[drive]
target = "virtual"
scale = 0.05

[equilibrium]
rate_c_per_min = 1.0
window_s = 20
timeout_s = 900

[cooldown]
margin_c = 1.0
timeout_s = 300

[factors]
slot = ["top"]
profile = ["single_gpu_load"]

[[workload]]
name = "sw"
kind = "seq_write"
runtime_s = 4
"""


def thermrig(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "thermrig.cli", *args], env=env, capture_output=True, text=True)


def test_a_virtual_drive_campaign_on_the_emulated_firmware(tmp_path: Path, influx: InfluxSettings) -> None:
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "THERMRIG_INFLUX_URL": influx.url,
        "THERMRIG_INFLUX_BUCKET": influx.bucket,
    }
    bad = tmp_path / "bad.toml"
    bad.write_text(CAMPAIGN.format(name="bad", firmware="arduino"))
    r = thermrig("plan", str(bad), env=env)
    assert r.returncode == 1 and "[rig] firmware: 'arduino'" in r.stderr and "zephyr" in r.stderr

    path = tmp_path / "zc.toml"
    path.write_text(CAMPAIGN.format(name="zc", firmware="zephyr"))
    r = thermrig("run", str(path), "--no-prompt", "--out", str(tmp_path / "runs"), env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [manifest] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/manifest.json")]
    assert manifest["status"] == "ok" and manifest["all_points_stored"]
    assert manifest["versions"]["firmware"].startswith("thermrig-zephyr ")
    assert manifest["rig"]["board"] == "qemu_cortex_m3"
    [s] = influxql(influx, "SELECT count(bw_bps) FROM fio_interval WHERE campaign = 'zc'")
    assert s.values[0][1] > 0
