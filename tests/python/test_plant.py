"""The plant model: analytic steady states, spin-up, determinism, and the sensor encodings."""

from __future__ import annotations

import math

import pytest

from thermrig.hardware.profiles import (
    SLOTS,
    ProfileError,
    load_chassis,
    load_drive_thermal,
    load_slot,
)
from thermrig.sim.plant import Plant
from thermrig.sim.sensors import MAX31855_OC, max31855_word, sht3x_crc8, sht3x_raw
from thermrig.sim.wires import SensorBank


def make_plant(slot: str = "top", heatsink: str = "none") -> Plant:
    return Plant(load_chassis(), load_slot(slot), load_drive_thermal(heatsink))


def run(plant: Plant, seconds: float, dt: float = 0.1) -> None:
    for _ in range(round(seconds / dt)):
        plant.step(dt)


def test_chassis_air_steady_state_matches_the_heat_balance() -> None:
    p = make_plant()
    p.heater_duty = 0.5
    p.fan_duty = [0.6, 0.0]
    run(p, 4000)
    c = p.chassis
    g = c.g_still + c.g_fan * p.fans[0].airflow
    expected = p.room_c + c.heater_max_w * 0.5 / g
    assert p.state.air == pytest.approx(expected, rel=2e-3)
    # The heater element runs hotter than the air by P / G_element.
    assert p.state.heater - p.state.air == pytest.approx(c.heater_max_w * 0.5 / c.g_heater_air, rel=2e-3)


def test_controller_sits_above_the_board_by_its_power_over_its_conductance() -> None:
    p = make_plant()
    p.drive_power_w = 6.0
    run(p, 3000)
    d = p.drive_thermal
    local = p.slot_air_c
    p_ctrl = 6.0 * d.ctrl_power_fraction
    g_ctrl_air = p.h_conv() * d.ctrl_area
    # Controller balance: p_ctrl = G_cb (ctrl - board) + G_ca (ctrl - local).
    assert p_ctrl == pytest.approx(
        d.g_ctrl_board * (p.state.ctrl - p.state.board) + g_ctrl_air * (p.state.ctrl - local), rel=1e-3
    )
    assert p.state.ctrl > p.state.board > local


def test_heatsink_cools_the_drive_and_airflow_cools_it_more() -> None:
    temps = {}
    for sink in ("none", "passive"):
        for fan1 in (0.0, 1.0):
            p = make_plant(heatsink=sink)
            p.drive_power_w = 6.0
            p.fan_duty = [0.4, fan1]
            run(p, 3000)
            temps[sink, fan1] = p.state.ctrl
    assert temps["passive", 0.0] < temps["none", 0.0] - 5
    assert temps["none", 1.0] < temps["none", 0.0] - 5


def test_slot_coupling_orders_the_slots() -> None:
    air = {}
    for slot in SLOTS:
        p = make_plant(slot)
        p.heater_duty = 0.5
        p.fan_duty = [0.4, 0.0]
        run(p, 3000)
        air[slot] = (p.slot.air_coupling, p.state.board)
    # the more of the chassis-air rise a slot sees, the warmer a drive in it (convection differs too,
    # but the heat profile dominates with the drive idle)
    by_coupling = [board for _, board in sorted(air.values())]
    assert by_coupling == sorted(by_coupling)


def test_fan_spins_up_with_its_time_constant_and_follows_the_intel_curve() -> None:
    p = make_plant()
    fan = p.fans[0]
    c = p.chassis
    assert fan.steady_rpm(0.0) == 0
    assert fan.steady_rpm(0.1) == pytest.approx(c.fan_max_rpm * c.fan_min_rpm_fraction)
    assert fan.steady_rpm(1.0) == pytest.approx(c.fan_max_rpm)
    for _ in range(round(c.fan_spinup_s / 0.01)):
        fan.step(1.0, 0.01)
    assert fan.rpm / c.fan_max_rpm == pytest.approx(1 - math.exp(-1), abs=0.01)


def test_sensor_bank_is_deterministic_for_a_seed() -> None:
    def lines(seed: int) -> list[str]:
        p = make_plant()
        bank = SensorBank(p, seed)
        p.heater_duty = 0.3
        p.fan_duty = [0.5, 0.5]
        out = []
        for _ in range(50):
            p.step(0.1)
            out.append(bank.sample_line(0.1))
        return out

    assert lines(7) == lines(7)
    assert lines(7) != lines(8)


def test_max31855_word_layout() -> None:
    assert max31855_word(25.0, 25.0) == (100 << 18) | (400 << 4)
    assert max31855_word(-0.25, 0.0) >> 18 == 0x3FFF
    assert max31855_word(25.13, 0.0) >> 18 == 101  # quantised to 0.25 C
    word = max31855_word(30.0, 20.0, MAX31855_OC)
    assert word & 0x10000 and word & 0x7 == MAX31855_OC and word >> 18 == 0


def test_sht3x_raw_matches_the_datasheet() -> None:
    assert sht3x_crc8(b"\xbe\xef") == 0x92
    raw = sht3x_raw(25.0, 50.0)
    assert raw[0:2] == (round(70 * 65535 / 175)).to_bytes(2, "big")
    assert raw[2] == sht3x_crc8(raw[0:2]) and raw[5] == sht3x_crc8(raw[3:5])


def test_unknown_profile_names_the_file_and_choices() -> None:
    with pytest.raises(ProfileError, match=r"slots.toml: no section \[attic\].*top"):
        load_slot("attic")
    with pytest.raises(ProfileError, match=r"heatsinks\.toml"):
        load_drive_thermal("liquid")


def test_malformed_profile_value_is_reported_with_file_and_key(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from thermrig.hardware.profiles import profiles_dir

    src = profiles_dir()
    dst = tmp_path / "profiles"
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_text(f.read_text())
    text = (dst / "chassis.toml").read_text().replace("max_w = 400.0", 'max_w = "lots"')
    (dst / "chassis.toml").write_text(text)
    monkeypatch.setenv("THERMRIG_HARDWARE_DIR", str(tmp_path))
    with pytest.raises(ProfileError, match=r"chassis.toml:\d+: \[heater\] max_w = 'lots', expected a number"):
        load_chassis()


def test_a_profile_in_the_users_config_dir_overrides_the_packaged_one(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from thermrig.hardware.profiles import profile_path, profiles_dir

    monkeypatch.delenv("THERMRIG_HARDWARE_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    packaged = load_chassis()
    mine = tmp_path / "thermrig" / "profiles"
    mine.mkdir(parents=True)
    text = (profiles_dir() / "chassis.toml").read_text().replace("max_w = 400.0", "max_w = 250.0")
    (mine / "chassis.toml").write_text(text)
    assert packaged.heater_max_w == 400.0 and load_chassis().heater_max_w == 250.0
    assert profile_path("slots.toml") == profiles_dir() / "slots.toml"  # the others stay the packaged ones


def test_the_heaters_exhaust_speeds_the_air_at_a_slot_in_it_with_its_output() -> None:
    from dataclasses import replace

    ctrl = {}
    for v_heater in (0.0, 2.0):
        p = Plant(load_chassis(), replace(load_slot("top"), v_heater=v_heater), load_drive_thermal("none"))
        p.fan_duty = [0.4, 0.0]
        p.drive_power_w = 6.0
        run(p, 30)
        assert p.heater_output_w == 0.0  # heater off: no exhaust, the chassis fan's air alone
        assert p.air_speed == pytest.approx(p.slot.v_chassis_fan * p.fans[0].airflow)
        p.heater_duty = 0.5
        run(p, 4000)
        c = p.chassis
        # at equilibrium the element gives the air what the heater puts in: half its full output
        assert p.heater_output_w == pytest.approx(0.5 * c.heater_max_w, rel=2e-3)
        expected = p.slot.v_chassis_fan * p.fans[0].airflow + v_heater * 0.5
        assert p.air_speed == pytest.approx(expected, rel=2e-3)
        ctrl[v_heater] = p.state.ctrl
    assert ctrl[2.0] < ctrl[0.0] - 3  # same air, the faster air past the drive cools it


def test_the_replay_holds_the_heater_where_the_rigs_pid_settles_it() -> None:
    from dataclasses import replace

    from thermrig.dut.replay import condition
    from thermrig.hardware.drive_profiles import load_drive_profile
    from thermrig.sim.plant_replay import _settled

    chassis = load_chassis()
    slot = replace(load_slot("top"), v_heater=2.0)
    cond = replace(condition(slot, load_drive_thermal("none"), "dual_gpu_load"), air_c=45.0)
    plant, _, air = _settled(chassis, load_drive_profile("950pro_512"), cond)
    loss = (chassis.g_still + chassis.g_fan * plant.fans[0].airflow) * (45.0 - plant.room_c)
    assert air == 45.0
    assert plant.heater_output_w == pytest.approx(loss)  # what the air loses to the room
    assert plant.heater_duty == pytest.approx(loss / chassis.heater_max_w)
    before = (plant.state.air, plant.state.heater)
    plant.step(1.0)
    assert (plant.state.air, plant.state.heater) == pytest.approx(before)  # an equilibrium: nothing moves


def test_a_chip_select_held_low_answers_beside_every_other_chip() -> None:
    """cs-stuck: the held chip keeps its last conversion and drives MISO whichever chip is selected, so
    every other channel reads the AND of its own word and that one (not a word of all ones)."""

    def words(bank: SensorBank, p: Plant) -> list[int]:
        p.step(0.1)
        return [int(w, 16) for w in bank.sample_line(0.1).split()[2:6]]

    p = make_plant()
    p.heater_duty = 1.0
    clean, held = SensorBank(p, 3), SensorBank(p, 3)
    for _ in range(20):
        words(clean, p), words(held, p)  # both banks' beads at the same place, noise from one seed each
    held.hold_chip_select(0)
    frozen = held.cs_stuck_word
    for _ in range(30):
        p.step(0.1)
        truth = [int(w, 16) for w in clean.sample_line(0.1).split()[2:6]]
        seen = [int(w, 16) for w in held.sample_line(0.1).split()[2:6]]
        assert seen == [frozen] + [w & frozen for w in truth[1:]]
        assert 0xFFFFFFFF not in seen
