"""The fault matrix's deadlines follow the firmware's limits: each case holds the deadline computed from
thermrig.protocol.limits, and a limit changed in a copy moves the deadlines that follow from it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from thermrig.conformance import fault_matrix
from thermrig.conformance.deadlines import DEADLINES, Deadlines
from thermrig.dut.faults import FaultKind
from thermrig.protocol import limits
from thermrig.protocol.messages import Fault


def changed(**new: float) -> SimpleNamespace:
    """A copy of the limits with some changed."""
    return SimpleNamespace(**{**{k: v for k, v in vars(limits).items() if k.isupper()}, **new})


def deadline(kind: FaultKind, expect: Fault) -> float:
    return next(c.deadline_s for c in fault_matrix.CASES if c.kind is kind and c.expect == expect)


def test_the_matrix_holds_the_computed_deadlines() -> None:
    d = Deadlines.of(limits)
    assert d == DEADLINES
    one_sample = [FaultKind.TC_OPEN, FaultKind.TC_SHORT_GND, FaultKind.TC_SHORT_VCC, FaultKind.SPI_ALL_ONES]
    for kind in [*one_sample, FaultKind.SPI_ALL_ZEROS]:
        assert all(c.deadline_s == d.one_sample_s for c in fault_matrix.CASES if c.kind is kind)
    assert deadline(FaultKind.TC_STUCK, Fault.OVER_TEMP) == d.one_sample_s
    assert deadline(FaultKind.TC_STUCK, Fault.UNDER_TEMP) == d.one_sample_s
    assert deadline(FaultKind.TC_NOISY, Fault.TC_JUMP) == d.noisy_jump_s
    assert deadline(FaultKind.TC_STUCK, Fault.HEATER_RUNAWAY) == d.runaway_air_stuck_low_s
    assert deadline(FaultKind.HEATER_OPEN, Fault.HEATER_RUNAWAY) == d.runaway_heater_open_s
    assert deadline(FaultKind.CS_STUCK, Fault.TC_JUMP) == d.runaway_cs_stuck_s
    assert deadline(FaultKind.HEATER_STUCK_ON, Fault.HEATER_STUCK) == d.heater_stuck_s
    assert deadline(FaultKind.FAN_STALL, Fault.FAN_STALL) == d.fan_stall_s
    assert deadline(FaultKind.TACH_MISSING, Fault.FAN_STALL) == d.fan_stall_s
    assert deadline(FaultKind.WATCHDOG_RESET, Fault.WATCHDOG) == d.watchdog_s
    assert d.serial_silence_s == fault_matrix.SILENCE_SAFE_S


def test_every_case_watches_past_its_deadline() -> None:
    for case in fault_matrix.CASES:
        assert case.observe_s >= case.deadline_s, case.name


def test_the_values_today() -> None:
    """The limits of rig_config.h give these; a change here is a change of what the suite accepts."""
    assert Deadlines.of(limits) == Deadlines(
        one_sample_s=0.15,
        noisy_jump_s=2.0,
        runaway_air_stuck_low_s=41.0,
        runaway_heater_open_s=61.0,
        runaway_cs_stuck_s=61.0,
        heater_stuck_s=30.0,
        fan_stall_s=3.15,
        watchdog_s=0.2,
        serial_silence_s=3.2,
    )


@pytest.mark.parametrize(
    ("limit", "value", "moved"),
    [
        (
            "TICK_S",
            0.2,
            {"one_sample_s": 0.3, "noisy_jump_s": 4.0, "fan_stall_s": 3.3, "watchdog_s": 0.4, "serial_silence_s": 3.4},
        ),
        ("HOST_TIMEOUT_S", 5.0, {"serial_silence_s": 5.2}),
        ("FAN_STALL_S", 4.0, {"fan_stall_s": 4.15}),
        ("STUCK_SETTLE_S", 15.0, {"heater_stuck_s": 35.0}),
        ("STUCK_WINDOW_S", 30.0, {"heater_stuck_s": 40.0}),
        ("TC_MAX_JUMP_C", 8.0, {"noisy_jump_s": 3.8}),
        ("VERIFY_GAIN_TIME_S", 30.0, {"runaway_heater_open_s": 71.0, "runaway_cs_stuck_s": 71.0}),
        (
            "VERIFY_MAX_ERROR_C_S",
            180.0,
            {"runaway_air_stuck_low_s": 61.0, "runaway_heater_open_s": 81.0, "runaway_cs_stuck_s": 81.0},
        ),
        (
            "VERIFY_HYST_C",
            6.0,
            {"runaway_air_stuck_low_s": 61.0, "runaway_heater_open_s": 81.0, "runaway_cs_stuck_s": 81.0},
        ),
        ("VERIFY_GAIN_C", 1.0, {"runaway_heater_open_s": 51.0, "runaway_cs_stuck_s": 51.0}),
    ],
)
def test_a_changed_limit_moves_its_deadlines(limit: str, value: float, moved: dict[str, float]) -> None:
    before = Deadlines.of(limits)
    after = Deadlines.of(changed(**{limit: value}))
    changes = {name: getattr(after, name) for name in vars(before) if getattr(after, name) != getattr(before, name)}
    assert changes == moved
