"""`thermrig rig selftest` prints each check's outcome, n/a with its reason, and counts passed / n/a / failed:
a check that does not apply is never counted as passed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_selftest_says_n_a_and_why_and_counts_it_apart(isolated_env: dict[str, str], tmp_path: Path) -> None:
    report = tmp_path / "selftest.json"
    only = ["--only", "handshake", "--only", "time-sync", "--only", "fault:pwm-error:0"]
    res = subprocess.run(
        [sys.executable, "-m", "thermrig.cli", "rig", "selftest", "--sim", *only, "--json", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**isolated_env, "COLUMNS": "400"},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert any(line.startswith("PASS handshake: ") for line in lines), res.stdout
    assert "n/a time-sync: the rig runs in virtual time: its clock stands still between steps" in res.stdout
    assert "n/a fault:pwm-error:0: pwm-error: the rigsim firmware has no PWM driver that can fail" in res.stdout
    assert lines[-1] == "1 passed / 2 n/a / 0 failed", res.stdout
    outcomes = {r["name"]: (r["outcome"], r["detail"]) for r in json.loads(report.read_text())}
    assert outcomes["handshake"] == ("passed", "")
    assert outcomes["time-sync"][0] == "n/a" and "virtual time" in outcomes["time-sync"][1]
    assert outcomes["fault:pwm-error:0"][0] == "n/a" and "no PWM driver" in outcomes["fault:pwm-error:0"][1]
