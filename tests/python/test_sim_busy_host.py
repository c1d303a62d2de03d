"""A simulated rig in real time on a busy host: `thermrig rig selftest --port` against `thermrig sim` passes
its real-time checks (telemetry, time-sync, bad-frames) while two CPU-bound processes keep both cores of a
2-core machine busy, as a rig with an MCU of its own would. The simulated MCU runs each tick when it is due
whenever the host lets it run (firmware/sim/rigsim.c), so its 10 Hz is the rig's, not the host's. A rig
whose control loop truly misses ticks (the injected `tick-stall`) still fails the telemetry check."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from interruptible import with_default_sigint
from sim_helpers import served_port

from thermrig.conformance.check_runner import run_check
from thermrig.conformance.checks import CHECKS
from thermrig.conformance.result import Outcome
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.faults import FaultKind
from thermrig.sim.fault_injection import FaultError
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.testbed import LocalRig, open_testbed

THERMRIG = [sys.executable, "-m", "thermrig.cli"]
REAL_TIME_CHECKS = ("telemetry", "time-sync", "bad-frames")
TELEMETRY = next(c for c in CHECKS if c.name == "telemetry")


@pytest.fixture
def served_sim(isolated_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """`thermrig sim` (real time) in the background, as a user starts it; its port. Ctrl-C stops it."""
    proc = subprocess.Popen(
        with_default_sigint([*THERMRIG, "sim", "--link", str(tmp_path / "rig-tty")]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=isolated_env,
        cwd=tmp_path,
    )
    try:
        yield served_port(proc)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.fixture
def two_cpu_burners() -> Iterator[None]:
    """Two CPU-bound processes at the host's own priority, for as long as the test runs."""
    burners = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def test_rig_selftest_against_thermrig_sim_beside_two_cpu_burners(
    served_sim: str, two_cpu_burners: None, isolated_env: dict[str, str], tmp_path: Path
) -> None:
    only = [arg for name in REAL_TIME_CHECKS for arg in ("--only", name)]
    res = subprocess.run(
        [*THERMRIG, "rig", "selftest", "--port", served_sim, *only],
        capture_output=True,
        text=True,
        env=isolated_env,
        cwd=tmp_path,
        timeout=300,
    )
    print(res.stdout)
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}"
    for name in REAL_TIME_CHECKS:
        assert f"PASS {name}:" in res.stdout, res.stdout


def test_a_rig_that_misses_ticks_fails_telemetry() -> None:
    """The control loop stalls 400 ms a few seconds into the check: four ticks missed, a 500 ms spacing in
    the rig's own uptime."""
    with SimulatedRig(SimConfig()) as sim, open_testbed(LocalRig(sim.port), keepalive=False) as bed:
        sent = 0

        def stall_at_the_sixth_ping() -> None:
            nonlocal sent
            sent += 1
            if sent == 6:
                sim.faults.inject(FaultKind.TICK_STALL, value=400.0)

        bed.link.add_send_listener(stall_at_the_sixth_ping)
        result = run_check(RigUnderTest(bed), TELEMETRY)
    print(result.text)
    assert sent >= 6, "the check sent fewer pings than the stall waits for"
    assert result.outcome is Outcome.FAILED, result.text
    assert "largest spacing" in result.detail, result.detail
    spacing = int(result.detail.split("largest spacing ")[1].split()[0])
    assert 450 <= spacing <= 550, result.detail


def test_only_rigsim_stalls_its_loop() -> None:
    with SimulatedRig(SimConfig(firmware="micropython")) as other, pytest.raises(FaultError, match="its own loop"):
        other.faults.inject(FaultKind.TICK_STALL)
