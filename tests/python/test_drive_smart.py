"""The drive's own account as nvme-cli prints it: the smart-log with, where the drive has it, the OCP
extended SMART log (C0h), read by the 1 Hz monitor and over SSH, and stored in drive_smart. The JSON is
the shape nvme-cli's OCP plugin prints (plugins/ocp/ocp-print-json.c: output format versions 1 and 2);
a drive the test machine does not have answers through tests/python/fake_nvme."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from thermrig.db.schema import RunTags, drive_line
from thermrig.drive.smart import SmartError, SmartReader, is_ocp_log, parse_ocp_smart_log, parse_smart_log

FAKE_NVME = Path(__file__).parent / "fake_nvme"
GUID = "0xafd514c97c6f4f9ca4f2bfea2810afc5"  # the C0h log's GUID as nvme-cli prints it

# `nvme ocp smart-add-log -o json` (output format version 1, the default): the fields before and after
# the throttling ones, as nvme-cli names them.
OCP_V1 = {
    "Physical media units written": {"hi": 0, "lo": 81_290_000_000},
    "Physical media units read": {"hi": 0, "lo": 40_020_000_000},
    "Bad user nand blocks - Raw": 0,
    "Bad user nand blocks - Normalized": 100,
    "XOR recovery count": 0,
    "Uncorrectable read error count": 0,
    "Max User data erase counts": 41,
    "Min User data erase counts": 12,
    "Number of Thermal throttling events": 3,
    "Current throttling status": 1,
    "PCIe correctable error count": 0,
    "Incomplete shutdowns": 0,
    "Percent free blocks": 35,
    "Log page version": 4,
    "Log page GUID": GUID,
    "Max temperature recorded": 79,
    "Power State Change Count": 12,
}
# --output-format-version 2: the same log with snake_case keys
OCP_V2 = {
    "physical_media_units_written": {"hi": 0, "lo": 81_290_000_000},
    "physical_media_units_read": {"hi": 0, "lo": 40_020_000_000},
    "bad_user_nand_blocks_raw": 0,
    "max_user_data_erase_count": 41,
    "min_user_data_erase_count": 12,
    "thermal_throttling_events": 7,
    "current_throttling_status": 0,
    "pcie_correctable_errors": 0,
    "log_page_version": 4,
    "log_page_guid": GUID,
    "max_temperature_recorded": 79,
    "power_state_change_count": 12,
}
SMART = {
    "critical_warning": 0,
    "temperature": 341,
    "avail_spare": 100,
    "percent_used": 1,
    "warning_temp_time": 2,
    "critical_comp_time": 0,
    "temperature_sensor_1": 345,
    "temperature_sensor_2": 333,
    "thm_temp1_trans_count": 4,
    "thm_temp2_trans_count": 1,
    "thm_temp1_total_time": 95,
    "thm_temp2_total_time": 6,
}


def test_both_output_formats_of_the_ocp_log_give_the_throttling_count_and_status() -> None:
    assert parse_ocp_smart_log(json.dumps(OCP_V1)) == {"ocp_throttle_events": 3, "ocp_throttle_status": 1}
    assert parse_ocp_smart_log(json.dumps(OCP_V2)) == {"ocp_throttle_events": 7, "ocp_throttle_status": 0}
    assert is_ocp_log(OCP_V1) and is_ocp_log(OCP_V2) and not is_ocp_log(SMART)
    with pytest.raises(SmartError, match="no thermal throttling fields"):
        parse_ocp_smart_log(json.dumps({"log_page_guid": GUID}))
    with pytest.raises(SmartError, match="not JSON"):
        parse_ocp_smart_log("NVMe status: Invalid Log Page")


@pytest.fixture
def drive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "drive.json"
    monkeypatch.setenv("FAKE_NVME_STATE", str(state))
    monkeypatch.setenv("PATH", f"{FAKE_NVME}{os.pathsep}{os.environ['PATH']}")
    return state


def _log(state: Path) -> list[str]:
    return json.loads(state.read_text())["log"]


def test_a_drive_with_the_ocp_log_is_read_with_it_and_one_without_with_the_plain_smart_log(drive: Path) -> None:
    drive.write_text(json.dumps({"id_ctrl": {}, "hctm": 0, "log": [], "smart": SMART, "ocp": OCP_V1}))
    fields = SmartReader("/dev/nvme0").read()
    assert fields["ocp_throttle_events"] == 3 and fields["ocp_throttle_status"] == 1
    assert fields["tmt1_count"] == 4 and fields["composite_c"] == pytest.approx(67.85)
    tags = RunTags(rig="r", run="run-1", campaign="c")
    line = drive_line(fields, 1_700_000_000_000_000_000, tags)
    assert line.startswith("drive_smart,") and "ocp_throttle_events=3i" in line and "ocp_throttle_status=1i" in line

    drive.write_text(json.dumps({"id_ctrl": {}, "hctm": 0, "log": [], "smart": SMART}))  # no C0h log
    reader = SmartReader("/dev/nvme0")
    first, second = reader.read(), reader.read()
    assert "ocp_throttle_events" not in first and first == second and first["tmt2_time_s"] == 6
    assert reader.has_ocp is False
    asked = _log(drive)
    assert sum(a.startswith("ocp smart-add-log") for a in asked) == 1, asked  # tried once, then not again
    assert sum(a.startswith("smart-log") for a in asked) == 2


def test_the_smart_log_parser_still_refuses_what_is_not_a_smart_log() -> None:
    with pytest.raises(SmartError, match="no temperature"):
        parse_smart_log(json.dumps(OCP_V2))
