"""The conformance suite (thermrig.conformance) against the simulated rig: every protocol check and
every row of the fault matrix in docs/safety.md, each with the figure it measured."""

from __future__ import annotations

import pytest

from thermrig.conformance.result import Check
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.conformance.runner import ALL_CHECKS, run_check


@pytest.mark.parametrize("check", ALL_CHECKS, ids=[c.name for c in ALL_CHECKS])
def test_check(target: RigUnderTest, check: Check) -> None:
    result = run_check(target, check)
    print(f"{check.name}: {result.figure}")
    assert result.passed is True, f"{result.figure}: {result.detail}"


def test_real_hardware_is_protected_from_heating_checks(target: RigUnderTest) -> None:
    live = RigUnderTest(target.link, sim=None, destructive=False)
    skipped = [run_check(live, c) for c in ALL_CHECKS if c.heats or c.needs_sim]
    assert skipped and all(r.passed is None for r in skipped)
    assert {r.detail for r in skipped} == {
        "heats the rig: pass --destructive on real hardware",
        "needs fault injection: run with --sim",
    }


def test_every_safety_row_has_a_check() -> None:
    from pathlib import Path

    table = (Path(__file__).resolve().parents[2] / "docs" / "safety.md").read_text()
    names = {c.name for c in ALL_CHECKS}
    for fault, check in {
        "thermocouple open": "fault:tc-open:3",
        "short to GND": "fault:tc-short-gnd:1",
        "over temperature": "fault:tc-stuck:3",
        "implausible jump": "fault:tc-noisy:1",
        "heater runaway": "fault:heater-open",
        "hold lost": "fault:hold-lost",
        "host lost": "heartbeat-failsafe",
        "fan stall": "fault:fan-stall:1",
        "watchdog reset": "fault:watchdog-reset",
        "heater stuck on": "fault:heater-stuck-on",
        "ambient sensor": "fault:ambient-missing",
        "output error": "fault:pwm-error:0",
        "spi-all-ones": "fault:spi-all-ones:2",
        "spi-all-zeros": "fault:spi-all-zeros:1",
        "cs-stuck": "fault:cs-stuck:0",
        "ambient-crc-temp": "fault:ambient-crc-temp",
    }.items():
        assert fault in table and check in names
