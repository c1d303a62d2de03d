"""A drive's thermal configuration (nvme id-ctrl, HCTM) and host-controlled thermal management on the
virtual drive and, through a stand-in for nvme-cli in front of a drive this machine does not have, on a
real one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from thermrig.drive.thermal_config import (
    ThermalConfig,
    ThermalConfigError,
    check_hctm,
    hctm_applied,
    hctm_value,
    parse_hctm_feature,
    parse_id_ctrl,
    read_thermal_config,
)
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.hardware.power_state import PowerState
from thermrig.virtual_drive.drive_model import DriveModel

FAKE_NVME = Path(__file__).parent / "fake_nvme"

# nvme-cli 1.x prints a power state's MXPS and NOPS as bits of "flags"; 2.x as fields of their own.
ID_CTRL_1X = {
    "mn": "a drive with HCTM",
    "wctemp": 357,
    "cctemp": 361,
    "hctma": 1,
    "mntmt": 273,
    "mxtmt": 357,
    "npss": 2,
    "psds": [
        {"max_power": 500, "flags": 0, "entry_lat": 0},
        {"max_power": 35000, "flags": 1, "entry_lat": 0},  # MXPS: 0.0001 W units
        {"max_power": 35, "flags": 3, "entry_lat": 4000},  # non-operational, MXPS
    ],
}


def test_id_ctrl_in_nvme_cli_1x_form() -> None:
    c = parse_id_ctrl(json.dumps(ID_CTRL_1X))
    assert (c.wctemp_c, c.cctemp_c, c.mntmt_c, c.mxtmt_c) == (83.85, 87.85, -0.15, 83.85)
    assert c.hctm_supported is True
    assert c.power_states == (PowerState(5.0), PowerState(3.5), PowerState(0.0035, operational=False))


def test_the_virtual_drive_answers_id_ctrl_as_nvme_cli_2x_prints_it() -> None:
    model = DriveModel(load_drive_profile("950pro_512"))
    c = parse_id_ctrl(json.dumps(model.id_ctrl()))
    assert c.hctm_supported is True
    assert c.wctemp_c is None and c.cctemp_c is None  # reported as 0: not implemented
    assert c.mxtmt_c == pytest.approx(model.profile.tmt2_c, abs=0.5)
    assert [ps.max_w for ps in c.power_states] == [s.max_w for s in model.profile.states]


def test_a_drive_that_reports_no_thermal_fields_is_recorded_without_them() -> None:
    c = parse_id_ctrl(json.dumps({"mn": "old drive", "wctemp": 0, "psds": []}))
    assert c == ThermalConfig()
    assert c.fields() == {}
    with pytest.raises(ThermalConfigError, match="does not report host-controlled thermal management"):
        check_hctm(c, 70, 80, "/dev/nvme0")


def test_hctm_value_packs_tmt1_over_tmt2_in_kelvin_and_reads_back() -> None:
    value = hctm_value(70, 80)
    assert value == (343 << 16) | 353
    assert (
        parse_hctm_feature(f"get-feature:0x10 (Host Controlled Thermal Management), Current value:{value:#010x}")
        == value
    )
    assert parse_hctm_feature(json.dumps({"value": value})) == value
    c = ThermalConfig().with_hctm(value)
    assert (c.tmt1_c, c.tmt2_c) == (69.85, 79.85)
    with pytest.raises(ThermalConfigError, match="no HCTM value"):
        parse_hctm_feature("NVMe status: Invalid Field in Command")


@pytest.mark.parametrize(
    ("tmt1", "tmt2", "message"),
    [
        (80, 80, "TMT1 80 °C must be below TMT2 80 °C"),
        (70, 90, r"TMT2 90 °C is outside the -0.15..83.85 °C that /dev/nvme0 accepts"),
        (-5, 60, r"TMT1 -5 °C is outside"),
    ],
)
def test_thresholds_the_drive_would_refuse_are_refused_before_the_run(tmt1: float, tmt2: float, message: str) -> None:
    with pytest.raises(ThermalConfigError, match=message):
        check_hctm(parse_id_ctrl(json.dumps(ID_CTRL_1X)), tmt1, tmt2, "/dev/nvme0")
    check_hctm(parse_id_ctrl(json.dumps(ID_CTRL_1X)), 60, 75, "/dev/nvme0")  # in range: accepted


def test_the_virtual_drive_throttles_at_the_hosts_tmt1_on_its_composite_temperature() -> None:
    def state_after(hctm: int) -> int:
        model = DriveModel(load_drive_profile("950pro_512"))
        model.set_hctm(hctm)
        p = model.profile
        board_c = p.tmt1_c - 10 - p.composite_offset_c  # the composite 10 K under the drive's own TMT1
        for _ in range(round(2 * p.step_s / 0.1)):
            model.tick(0.1, p.tmt1_c - 5, board_c)  # the controller 5 K under it
        return model.state

    p = load_drive_profile("950pro_512")
    assert state_after(0) == 0
    assert state_after(hctm_value(p.tmt1_c - 15, p.tmt1_c - 5)) > 0  # host TMT1 under the composite
    with pytest.raises(ValueError, match="Invalid Field in Command"):
        DriveModel(p).set_hctm(hctm_value(80, 70))
    with pytest.raises(ValueError, match="Invalid Field in Command"):
        DriveModel(p).set_hctm(hctm_value(60, p.tmt2_c + 5))


@pytest.fixture
def fake_drive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "drive.json"
    state.write_text(json.dumps({"id_ctrl": ID_CTRL_1X, "hctm": hctm_value(75, 82), "log": []}))
    monkeypatch.setenv("FAKE_NVME_STATE", str(state))
    monkeypatch.setenv("PATH", f"{FAKE_NVME}{os.pathsep}{os.environ['PATH']}")
    return state


def test_hctm_is_set_for_the_run_and_the_drives_own_value_restored_even_on_ctrl_c(fake_drive: Path) -> None:
    assert read_thermal_config("/dev/nvme0").tmt1_c == 74.85
    with pytest.raises(KeyboardInterrupt), hctm_applied("/dev/nvme0", 60, 70) as during:
        assert json.loads(fake_drive.read_text())["hctm"] == hctm_value(60, 70)
        assert (during.tmt1_c, during.tmt2_c) == (59.85, 69.85)
        raise KeyboardInterrupt
    assert json.loads(fake_drive.read_text())["hctm"] == hctm_value(75, 82)


def test_a_refused_threshold_sets_nothing_on_the_drive(fake_drive: Path) -> None:
    with pytest.raises(ThermalConfigError, match="outside"), hctm_applied("/dev/nvme0", 60, 95):
        pass
    log = json.loads(fake_drive.read_text())["log"]
    assert not any(line.startswith("set-feature") for line in log)
