"""The fault matrix's dead serial line, judged by the outputs the firmware drives at each plant step: a
healthy rig is safe within the host timeout, a tick and a step, and a firmware that waits longer fails."""

from __future__ import annotations

from pathlib import Path

from board_files import board_files, replace_in

from thermrig.conformance.check_runner import run_check
from thermrig.conformance.fault_matrix import FAULT_CHECKS, SILENCE_SAFE_S
from thermrig.conformance.result import CheckResult, Outcome
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.pacing import Pacing
from thermrig.testbed import SimulatedRigSpec, open_testbed

SERIAL_SILENCE = next(c for c in FAULT_CHECKS if c.name == "fault:serial-silence")


def silence_on(firmware: str, image: Path | None = None) -> CheckResult:
    spec = SimulatedRigSpec(Pacing.stepped(), seed=11, firmware=firmware, image=image)
    with open_testbed(spec, keepalive=False) as bed:
        result = run_check(RigUnderTest(bed, bed.sim), SERIAL_SILENCE)
    print(f"{firmware}: {result.text}")
    return result


def test_a_healthy_rig_is_safe_a_tick_past_the_host_timeout() -> None:
    """The first tick more than 3 s after the host's last frame drives the safe state: 3.1 s, stepped."""
    result = silence_on("micropython-pico")
    assert result.outcome is Outcome.PASSED, result.text
    assert "heater off, fans full 3.1 s into the silence" in result.figure


def test_a_firmware_that_waits_longer_than_the_host_timeout_fails(tmp_path: Path) -> None:
    slow = board_files(
        tmp_path, replace_in("thermrig_fw/config.py", "HOST_TIMEOUT_MS = const(3000)", "HOST_TIMEOUT_MS = const(3200)")
    )
    result = silence_on("micropython-pico", slow)
    assert result.outcome is Outcome.FAILED, result.text
    assert f"heater off 3.3 s into the silence (bound {SILENCE_SAFE_S:g} s)" in result.detail
