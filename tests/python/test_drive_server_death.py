"""A virtual-drive campaign whose drive server (nbdkit) dies under fio: the campaign stops with one
line saying so, and the run is recorded as failed with the rig put safe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from campaign_helpers import manifests, start_run

CAMPAIGN = """\
[campaign]
name = "dies"
seed = 1
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
name = "w"
kind = "seq_write"
runtime_s = 120
"""


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is pid: {pid: command name}."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        if int(rest[1]) == pid:
            found[int(stat.parent.name)] = name
    return found


@pytest.mark.timeout(600)
def test_a_campaign_stops_with_one_line_when_the_drive_server_dies(tmp_path: Path, influx_env: dict[str, str]) -> None:
    path = tmp_path / "dies.toml"
    path.write_text(CAMPAIGN)
    out = tmp_path / "runs"
    run = start_run(path, out, influx_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 500
        nbdkit = None
        while nbdkit is None:  # wait for fio to be writing to the drive
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "fio never started"
            kids = _children(run.pid)
            if "fio" in kids.values():
                nbdkit = next(pid for pid, name in kids.items() if name == "nbdkit")
            else:
                time.sleep(0.2)
        time.sleep(1.0)  # a second of writing
        os.kill(nbdkit, signal.SIGKILL)  # the nbdkit of the campaign this test started
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 1
    said = [line for line in (stdout + stderr).splitlines() if "nbdkit" in line]
    assert len(said) == 1 and "exited with status -9" in said[0] and "the campaign stops (rig is safe)" in said[0]
    (manifest,) = manifests(out).values()
    assert manifest["status"] == "failed" and "nbdkit" in json.dumps(manifest)
