"""Every campaign kind on the virtual drive, end to end: the simulated rig, the real fio over NBD, a
private influxd. A mixed sweep, SNIA preconditioning by the fast path, a consistency run over 25 %
spare area, and SNIA steady-state rounds, in one short campaign."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from thermrig.analysis.influx_source import load_campaign
from thermrig.calibration.seed_runs import steady_state_of, sweep_of
from thermrig.db.influx_settings import InfluxSettings
from thermrig.hardware.drive_profiles import load_drive_profile

CAMPAIGN = """\
[campaign]
name = "virt"
seed = 7
baseline_s = 2

[rig]
port = "sim"
speed = 20

[drive]
target = "virtual"
profile = "950pro_512"
scale = 0.05

[equilibrium]
rate_c_per_min = 2.0
window_s = 10
timeout_s = 600

[cooldown]
margin_c = 3.0
timeout_s = 300

[factors]
profile = ["idle"]

[[workload]]
name = "mix"
kind = "mixed_random_sweep"
runtime_s = 3
steps = [100, 30]

[[workload]]
name = "precondition"
kind = "snia_precondition"

[[workload]]
name = "spare25"
kind = "consistency"
runtime_s = 4
span = "384g"
score_window_s = 2

[[workload]]
name = "steady"
kind = "snia_steady_state"
runtime_s = 2
max_rounds = 5
"""


@pytest.mark.timeout(600)
def test_every_kind_runs_on_the_virtual_drive(tmp_path: Path, influx: InfluxSettings) -> None:
    path = tmp_path / "virt.toml"
    path.write_text(CAMPAIGN)
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "THERMRIG_INFLUX_URL": influx.url,
        "THERMRIG_INFLUX_BUCKET": influx.bucket,
    }
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "thermrig.cli", "run", str(path), "--no-prompt", "--out", str(out)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=580)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    runs = {p.parent.name: json.loads(p.read_text()) for p in sorted(out.glob("*/manifest.json"))}
    assert len(runs) == 4 and all(m["status"] == "ok" for m in runs.values())
    jobs = {
        j["jobname"]: j
        for folder in out.iterdir()
        for f in folder.rglob("fio.json")
        for j in json.loads(f.read_text())["jobs"]
    }
    # the sweep's steps read and wrote as asked
    assert jobs["mix-read100"]["write"]["io_bytes"] == 0 and jobs["mix-read100"]["read"]["io_bytes"] > 0
    assert jobs["mix-read30"]["write"]["io_bytes"] > jobs["mix-read30"]["read"]["io_bytes"] > 0
    # the fast path: one block written by fio, the drive state set by the model; no fill job
    assert jobs["precondition"]["write"]["total_ios"] == 1
    assert "spare25-fill" not in jobs and jobs["spare25"]["write"]["iops"] > 0
    assert jobs["steady"]["write"]["total_ios"] > 0
    # What make calibrate reads back of seeds 000 and 004, here from this campaign's InfluxDB points: the
    # sweep's mean IOPS per step at the drive's scale (pure random reads at QD3: three requests in flight,
    # each the data sheet's QD1 latency), the consistency window's IOPS and the power states seen in it.
    drive = load_drive_profile("950pro_512")
    runs = {r.tags["workload"]: r for r in load_campaign(influx, "virt")}
    sweep = sweep_of(runs["mix"], 4096, (100, 30))
    assert sweep is not None and sweep[30] > 0
    assert sweep[100] == pytest.approx(3 * drive.qd1_rand_read_iops, rel=0.3)
    tail = steady_state_of(runs["spare25"], drive, window_s=2)
    assert tail is not None and len(tail.iops) == 2 and min(tail.iops) > 0
    assert tail.states == {"PS0"}  # four seconds from equilibrium: no throttle
