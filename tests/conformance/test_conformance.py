"""The conformance suite (thermrig.conformance) against the simulated rig: every protocol check and
every row of the fault matrix in docs/safety.md, each with the figure it measured."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from firmwares import FIRMWARES, NOT_APPLICABLE, RIGS, SECOND_RIG, firmware_of, runs_on

from thermrig.conformance.check_runner import ALL_CHECKS, run_check
from thermrig.conformance.result import Check, Outcome
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.simulation import FIRMWARES as SIMULATED_FIRMWARES


@pytest.mark.parametrize("check", ALL_CHECKS, ids=[c.name for c in ALL_CHECKS])
def test_check(
    target: RigUnderTest, check: Check, request: pytest.FixtureRequest, record_property: Callable[[str, str], None]
) -> None:
    """Each check passes, or is not applicable where (and only where) NOT_APPLICABLE says, for its reason."""
    firmware = firmware_of(request.node.callspec.params["target"])
    result = run_check(target, check)
    for key, value in (("firmware", firmware), ("check", check.name), ("outcome", result.outcome.value)):
        record_property(key, value)
    record_property("detail", result.detail)
    print(f"{check.name}: {result.text}")
    reason = NOT_APPLICABLE[firmware].get(check.name)
    if reason is None:
        assert result.outcome is Outcome.PASSED, result.text
    else:
        assert result.outcome is Outcome.NOT_APPLICABLE and reason in result.detail, result.text


def test_every_firmware_says_what_does_not_apply_to_it() -> None:
    """Every firmware a simulated rig can run, the suite's or not this time, has its n/a set."""
    assert set(FIRMWARES) <= set(SIMULATED_FIRMWARES) == set(NOT_APPLICABLE)
    names = {c.name for c in ALL_CHECKS}
    assert all(set(checks) <= names for checks in NOT_APPLICABLE.values())


def test_each_check_runs_on_one_rig_of_each_firmware() -> None:
    """Where a firmware's checks are shared out between two rigs (SECOND_RIG), every check still runs on
    it, on exactly one of them; a name SECOND_RIG lists is a check's."""
    names = [c.name for c in ALL_CHECKS]
    assert all(set(checks) <= set(names) for checks in SECOND_RIG.values())
    for firmware in FIRMWARES:
        rigs = [rig for rig in RIGS if firmware_of(rig) == firmware]
        assert all(sum(runs_on(rig, name) for rig in rigs) == 1 for name in names)


def test_real_hardware_is_protected_from_heating_checks(target: RigUnderTest) -> None:
    live = RigUnderTest(target.bed, sim=None, destructive=False)
    skipped = [run_check(live, c) for c in ALL_CHECKS if c.heats or c.needs_sim]
    assert skipped and all(r.outcome is Outcome.NOT_APPLICABLE and not r.passed for r in skipped)
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
