"""`thermrig rig selftest` prints each check's outcome, n/a with its reason, and counts passed / n/a / failed:
a check that does not apply is never counted as passed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from thermrig.conformance.check_runner import ALL_CHECKS, run_check
from thermrig.conformance.result import Outcome
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.pacing import Pacing
from thermrig.testbed import SimulatedRigSpec, open_testbed


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


def test_a_check_that_latches_a_fault_clears_it_and_runs_again_and_a_latch_from_before_is_named() -> None:
    """heartbeat-failsafe leaves the rig as it found it (a second selftest heats again); latch-and-clear
    latches a fault of its own, so it runs alone; a rig that refuses to heat because a fault was latched
    before says which, and how to clear it."""
    checks = {c.name: c for c in ALL_CHECKS}
    spec = SimulatedRigSpec(Pacing.stepped(), seed=5)
    with open_testbed(spec, keepalive=False) as bed:
        target = RigUnderTest(bed, bed.sim)
        for name in ("heartbeat-failsafe", "heartbeat-failsafe", "latch-and-clear"):
            result = run_check(target, checks[name])
            assert result.outcome is Outcome.PASSED, f"{name}: {result.text}"
        bed.link.set(heat=1, hlim=300, fan0=400)
        target.run_for(4.5, heartbeat=False)  # the host silent past its timeout: HOST_LOST latched
        result = run_check(target, checks["heater-limit"])
    assert result.outcome is Outcome.FAILED
    assert "refuses to heat while HOST_LOST is latched; find its cause, then `thermrig rig clear`" in result.text
