"""Each rule of the wiring diagnosis (thermrig.wiring) on synthetic telemetry: a rig wired right passes
it, and the miswiring it is for is found with the measurement and the fix it names. `rig bringup` and the
conformance `wiring` check both judge with these rules (test_bringup.py and test_board_miswired.py run
them on simulated and emulated rigs)."""

from __future__ import annotations

import pytest

from thermrig import wiring
from thermrig.protocol.channels import ChannelMap
from thermrig.protocol.messages import ChannelStatus, Fault, Reading, Telemetry

CHANNELS = ChannelMap.parse(
    "tc0:drive_ctrl,tc1:drive_nand,tc2:heatsink,tc3:chassis_air,amb:ambient_t,rh:ambient_rh,rpm0:fan0,rpm1:fan1"
)
ROOM = {"tc0": 22.0, "tc1": 22.0, "tc2": 22.0, "tc3": 22.0, "amb": 22.0}
S = ChannelStatus


def frame(
    i: int,
    temps: dict[str, float] | None = None,
    status: dict[str, ChannelStatus] | None = None,
    *,
    heater_pct: float = 0.0,
    faults: Fault | None = None,
    rpm: tuple[float, float] = (3000.0, 3000.0),
    period_ms: int = 100,
) -> Telemetry:
    """Frame i of a rig at 10 Hz (or every period_ms): the room, but for the temperatures and statuses given."""
    t = {**ROOM, **(temps or {})}
    st = status or {}
    readings = {key: Reading(t[key], st.get(key, S(0))) for key in ("tc0", "tc1", "tc2", "tc3", "amb")}
    readings["rh"] = Reading(40.0, S(0))
    fans = {f"rpm{j}": Reading(v, st.get(f"rpm{j}", S(0))) for j, v in enumerate(rpm)}
    readings.update(fans)
    return Telemetry(
        seq=i,
        uptime_ms=1000 + i * period_ms,
        temps={k: readings[k] for k in ("tc0", "tc1", "tc2", "tc3", "amb")},
        humidity=readings["rh"],
        rpm=fans,
        heater_pct=heater_pct,
        fan_pct={"fan0": 100.0, "fan1": 100.0},
        air_target_c=0.0,
        heat_enabled=False,
        heat_limit_pct=0.0,
        faults=faults or Fault(0),
        rx_errors=0,
        channels=CHANNELS,
        readings=readings,
    )


def steady(n: int = 30, **kw: object) -> list[Telemetry]:
    return [frame(i, **kw) for i in range(n)]  # type: ignore[arg-type]


# The heater at 0 %


def test_a_cold_heater_at_zero_passes_and_one_that_warms_the_air_is_named() -> None:
    assert wiring.heater_off(steady(100)) == wiring.Finding("heater at 0 %: chassis air 22.0 -> 22.0 °C in 10 s")
    warming = [frame(i, {"tc3": 22.0 + 0.0125 * i}) for i in range(100)]  # +1.25 °C over 10 s
    found = wiring.heater_off(warming)
    assert found is not None and found.fault
    assert found.measured == "heater at 0 %: chassis air 22.0 -> 23.2 °C in 10 s"
    assert found.fix.startswith("the heater heats at 0 %: its PWM is inverted")


def test_a_heater_stuck_on_latched_at_zero_is_named_even_before_the_air_warms() -> None:
    found = wiring.heater_off(steady(100, faults=Fault.HEATER_STUCK))
    assert found is not None and found.fault and found.measured.endswith("; heater stuck-on latched")


def test_a_heater_that_was_commanded_on_is_not_blamed_for_warming_the_air() -> None:
    warming = [frame(i, {"tc3": 22.0 + 0.0125 * i}, heater_pct=30.0) for i in range(100)]
    found = wiring.heater_off(warming)
    assert found is not None and not found.fault


def test_the_heater_is_not_judged_on_an_air_bead_that_does_not_read() -> None:
    assert wiring.heater_off(steady(100, status={"tc3": S.OPEN})) is None


# The thermocouples at room temperature


def test_a_rig_at_room_temperature_has_no_finding() -> None:
    room = wiring.room(steady())
    assert room.findings == [] and room.unreadable == []
    assert room.measured == "ambient 22.0 °C; drive_ctrl 22.0, drive_nand 22.0, heatsink 22.0, chassis_air 22.0"


def test_a_steady_impossible_value_names_the_spi_mode_and_bit_order() -> None:
    room = wiring.room(steady(temps={"tc3": -2047.75}, status={"tc3": S.RANGE}))
    [found] = room.findings
    assert found.measured == "tc3 (chassis_air) reads -2047.8 °C, no temperature at all, steadily"
    assert "check the SPI mode (0) and the bit order (MSB first)" in found.fix
    assert room.unreadable == ["chassis_air"]


def test_readings_that_spread_name_the_spi_clock_with_the_picos_baudrate() -> None:
    spread = [frame(i, {"tc1": 22.0 + (2.5 if i % 2 else 0.0)}) for i in range(30)]
    [found] = wiring.room(spread).findings
    assert found.measured == "drive_nand (tc1) 22.0 to 24.5 °C, ok"
    assert found.fix.startswith("unstable readings with the rig cold")
    assert "the SPI's baudrate on a Pico" in found.fix and "spi-max-frequency in a Zephyr overlay" in found.fix


def test_a_jump_flag_or_a_status_that_changes_reads_as_unstable() -> None:
    jump = wiring.room(steady(status={"tc0": S.JUMP}))
    flicker = wiring.room([frame(i, status={"tc0": S.OPEN if i % 3 == 0 else S(0)}) for i in range(30)])
    for room in (jump, flicker):
        [found] = room.findings
        assert found.fix.startswith("unstable readings") and "drive_ctrl (tc0)" in found.measured
        assert room.unreadable == ["drive_ctrl"]


def test_one_bead_open_names_its_chip_select() -> None:
    room = wiring.room(steady(temps={"tc2": 0.0}, status={"tc2": S.OPEN}))
    [found] = room.findings
    assert str(found) == (
        "tc2 (heatsink) reads 0.0 °C, open, while drive_ctrl, drive_nand, chassis_air read room temperature:"
        " check tc2's chip select (its wire, and its polarity: active low), its SPI mode (0) and then the bead's plug"
    )


def test_every_bead_open_names_first_what_they_share() -> None:
    opened = {k: S.OPEN for k in ("tc0", "tc1", "tc2", "tc3")}
    room = wiring.room(steady(temps={k: 0.0 for k in opened}, status=opened))
    [found] = room.findings
    assert found.fix.startswith("every thermocouple reads open: check first what they share: the SPI mode (0)")
    assert room.unreadable == ["drive_ctrl", "drive_nand", "heatsink", "chassis_air"]


def test_a_lead_shorted_names_the_plug_and_the_chips_wiring() -> None:
    [found] = wiring.room(steady(status={"tc1": S.SHORT_GND})).findings
    assert found.measured == "drive_nand (tc1) SHORT_GND"
    assert found.fix.startswith("check that thermocouple's plug and its MAX31855's wiring")


def test_a_bead_far_from_ambient_names_a_reversed_lead() -> None:
    room = wiring.room(steady(temps={"tc0": 26.0}))
    [found] = room.findings
    assert str(found) == (
        "drive_ctrl 26.0 °C: more than 3 °C from ambient with the rig cold: a reversed thermocouple lead or a"
        " bead on something warm"
    )
    assert room.unreadable == []  # it reads: its touch still tells something
    assert wiring.room(steady(temps={"tc0": 24.9})).findings == []


def test_without_the_ambient_sensor_the_beads_are_held_to_their_median() -> None:
    room = wiring.room(steady(temps={"amb": 0.0, "tc0": 26.0}, status={"amb": S.NO_DATA}))
    [found] = room.findings
    assert "from the thermocouples' median (no ambient reading)" in found.fix


def test_the_room_is_judged_over_its_seconds_of_rig_time_whatever_the_frame_rate() -> None:
    # A bead that jumped 4 s ago and reads steadily since: outside the room's 3 s, at 10 Hz and at 2 Hz.
    for period_ms in (100, 500):
        n = round(10_000 / period_ms)
        frames = [
            frame(i, {"tc0": 30.0 if i < n - 40_00 // period_ms else 22.0}, period_ms=period_ms) for i in range(n)
        ]
        window = wiring.last_seconds(frames, wiring.ROOM_WATCH_S)
        assert (window[-1].uptime_ms - window[0].uptime_ms) == 3000 - period_ms
        assert wiring.room(window).findings == []
        assert wiring.room(frames).findings != []  # the whole watch would see the jump


# The ambient sensor


def test_an_ambient_sensor_that_does_not_answer_names_its_bus() -> None:
    assert not wiring.ambient(frame(0)).fault
    found = wiring.ambient(frame(0, {"amb": 0.0}, {"amb": S.NO_DATA}))
    assert found.fix.startswith("the SHT31 does not answer") and "the bus clock (it takes up to 1 MHz)" in found.fix
    assert not wiring.ambient(frame(0, status={"amb": S.RANGE})).fault  # it answers: not a wiring fault


# A touched bead

BASE = {"drive_ctrl": 22.0, "drive_nand": 22.0, "heatsink": 22.0, "chassis_air": 22.0}


def test_a_touched_bead_must_raise_its_own_channel() -> None:
    own = wiring.touch(CHANNELS, "drive_ctrl", BASE, frame(0, {"tc0": 24.5}))
    assert own == wiring.Finding("drive_ctrl (tc0) rose +2.5 °C")
    for none in (
        wiring.touch(CHANNELS, "drive_ctrl", BASE, None),
        wiring.touch(CHANNELS, "drive_ctrl", BASE, frame(0)),
    ):
        assert none.measured == "no channel rose 2 °C in 20 s" and "check tc0's thermocouple and MAX31855" in none.fix


def test_a_touched_bead_that_raises_another_channel_names_the_swapped_chip_selects() -> None:
    found = wiring.touch(CHANNELS, "drive_ctrl", BASE, frame(0, {"tc1": 24.5}))
    assert found.measured == "the drive_ctrl bead raised drive_nand (tc1)"
    assert found.fix.startswith("the chip selects of tc0 and tc1 are swapped")
    both = wiring.touch(CHANNELS, "drive_ctrl", BASE, frame(0, {"tc0": 24.5, "tc1": 24.5}))
    assert both.measured == "the drive_ctrl bead raised drive_nand (tc1) and drive_ctrl" and both.fault


def test_a_touch_waits_for_a_rise_and_for_the_beads_to_settle() -> None:
    assert wiring.risen(frame(0, {"tc2": 23.9}), BASE, wiring.TOUCH_RISE_C) == []
    assert wiring.risen(frame(0, {"tc2": 24.0}), BASE, wiring.TOUCH_RISE_C) == ["heatsink"]
    assert not wiring.settled(frame(0, {"tc2": 23.0}), BASE) and wiring.settled(frame(0, {"tc2": 22.9}), BASE)


# Each fan


@pytest.mark.parametrize(
    ("low", "high", "fix"),
    [
        (1200.0, 3000.0, ""),
        (0.0, 0.0, "no tach pulses: check fan0's tach wire and its pull-up"),
        (3000.0, 1200.0, "fan0's speed follows another fan: its PWM and tach wires are from different fans"),
        (3000.0, 3000.0, "fan0 does not follow its duty: its PWM reaches no fan"),
    ],
)
def test_a_fans_speed_must_follow_its_own_duty(low: float, high: float, fix: str) -> None:
    found = wiring.fan(0, low, high)
    assert found.measured == f"fan0 {low:.0f} rpm at 40 %, {high:.0f} rpm at 100 % (the other fans the other way)"
    assert found.fix.startswith(fix) and found.fault == bool(fix)


def test_a_fans_speed_is_its_mean_over_the_last_second() -> None:
    frames = [frame(i, rpm=(1000.0 if i < 50 else 2000.0 + i % 2 * 100, 0.0)) for i in range(60)]
    assert wiring.fan_speed(frames, "rpm0") == 2050.0


# Latched output faults


def test_a_fan_standing_still_at_full_duty_is_named_and_only_it() -> None:
    stalled = frame(0, rpm=(3000.0, 0.0), status={"rpm1": S.STALL}, faults=Fault.FAN_STALL)
    found = wiring.stalled_fans(stalled)
    assert list(found) == [1] and found[1].fix.startswith("fan1 stands still at full duty: its PWM is inverted")
    assert wiring.stalled_fans(frame(0)) == {}


def test_a_refused_pwm_duty_names_the_timers() -> None:
    found = wiring.refused_pwm(frame(0, faults=Fault.OUTPUT_ERROR | Fault.FAN_STALL))
    assert found is not None and found.measured == "FAN_STALL,OUTPUT_ERROR latched"
    assert "1465 Hz at the least" in found.fix
    assert wiring.refused_pwm(frame(0, faults=Fault.TC_OPEN)) is None


def test_a_latched_fault_stops_the_heater_pulse() -> None:
    found = wiring.latched_fault(frame(0, faults=Fault.TC_OPEN))
    assert found is not None and found.measured == "a fault is latched: TC_OPEN" and found.fault
    assert wiring.latched_fault(frame(0)) is None


# The heater pulse


def test_the_heater_pulse_must_warm_the_chassis_air_first() -> None:
    assert wiring.heater_pulse(BASE, frame(0, {"tc3": 23.2})) == wiring.Finding("first to rise: chassis_air (+1.2 °C)")
    cold = wiring.heater_pulse(BASE, None)
    assert cold.measured == "nothing rose 1 °C in 40 s of heat" and cold.fix.startswith("the heater does not heat")
    aimed = wiring.heater_pulse(BASE, frame(0, {"tc2": 23.0}))
    assert aimed.measured == "first to rise: heatsink (+1.0 °C)"
    assert aimed.fix.startswith("the heater warms another bead before the chassis air")
