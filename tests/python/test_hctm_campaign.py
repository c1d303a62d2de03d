"""Host-controlled thermal management as a campaign factor: `hctm = ["off", "TMT1/TMT2"]` read and
refused at its line, checked against the drive before the first run (through a stand-in for nvme-cli in
front of a drive this machine does not have), set for a run and the drive's own value put back on
Ctrl-C (the virtual drive, through the device-under-test seam), and a campaign on the simulated rig
recording each run's thermal configuration in its manifest and InfluxDB, its drive throttled at the
lowered TMT1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from campaign_helpers import VIRTUAL_DRIVE, CampaignFile, manifests, run_args, start_run, thermrig

from thermrig.campaign.drive_thermal import check_hctm_levels, run_thermal
from thermrig.campaign.plan import make_plan
from thermrig.campaign.spec import CampaignError, load_campaign
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql
from thermrig.db.schema import RunTags
from thermrig.drive.thermal_config import HctmLevel, hctm_value
from thermrig.drive.under_test import LocalDrive
from thermrig.dut.pacing import Pacing
from thermrig.sim.drive_under_test import SimulatedDrive
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

FAKE_NVME = Path(__file__).parent / "fake_nvme"
ID_CTRL = {  # nvme-cli 1.x form: a drive taking TMTs from 0 to 85 °C (kelvin 273..358)
    "mn": "a drive with HCTM",
    "wctemp": 357,
    "cctemp": 361,
    "hctma": 1,
    "mntmt": 273,
    "mxtmt": 358,
    "psds": [{"max_power": 800, "flags": 0}, {"max_power": 600, "flags": 0}],
}


def _campaign(folder: Path, levels: str, drive: dict | None = None) -> Path:
    text = CampaignFile("hctm", drive or VIRTUAL_DRIVE).text()
    text = text.replace('profile = ["single_gpu_load"]\n', f'profile = ["single_gpu_load"]\nhctm = {levels}\n')
    path = folder / "c.toml"
    path.write_text(text)
    return path


def test_the_hctm_factor_crosses_the_plan_and_tags_each_run(tmp_path: Path) -> None:
    plan = make_plan(load_campaign(_campaign(tmp_path, '["off", "60/70.5"]')))
    assert sorted(r.hctm.label for r in plan.runs if r.hctm) == ["60/70.5", "off"]
    assert sorted(r.tags()["hctm"] for r in plan.runs) == ["60-70.5", "off"]
    plain = make_plan(load_campaign(CampaignFile("plain", VIRTUAL_DRIVE).write(tmp_path)))
    assert [r.hctm for r in plain.runs] == [None] and "hctm" not in plain.runs[0].tags()


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ('["hot"]', r"c.toml:\d+: \[factors\] hctm: 'hot' is not \"off\" or \"TMT1/TMT2\""),
        ('["70/60"]', r"c.toml:\d+: \[factors\] hctm: '70/60': TMT1 70 °C must be below TMT2 60 °C"),
        ('["off", 60]', r"c.toml:\d+: \[factors\] hctm: 60 is not"),
        ('["60/70", "60/70.0"]', r"c.toml:\d+: \[factors\] hctm: .* repeats a level"),
    ],
)
def test_a_bad_level_is_refused_at_its_line(tmp_path: Path, levels: str, message: str) -> None:
    with pytest.raises(CampaignError, match=message):
        load_campaign(_campaign(tmp_path, levels))


@pytest.fixture
def fake_nvme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "drive.json"
    state.write_text(json.dumps({"id_ctrl": ID_CTRL, "hctm": 0, "log": []}))
    monkeypatch.setenv("FAKE_NVME_STATE", str(state))
    monkeypatch.setenv("PATH", f"{FAKE_NVME}{os.pathsep}{os.environ['PATH']}")
    return state


def test_levels_the_drive_would_refuse_stop_the_campaign_before_anything_is_set(
    tmp_path: Path, fake_nvme: Path
) -> None:
    """A block device's controller (nvme0 behind /dev/nvme0n1) through nvme-cli: a TMT2 past MXTMT is
    refused at the factor's line; a drive without HCTM takes "off" only."""
    drive = LocalDrive("/dev/nvme0n1", block_device=True)
    campaign = load_campaign(_campaign(tmp_path, '["off", "60/90"]', {"target": "/dev/nvme0n1"}))
    with pytest.raises(CampaignError, match=r"c.toml:\d+: \[factors\] hctm: '60/90': TMT2 90 °C is outside the "):
        check_hctm_levels(campaign, drive)
    check_hctm_levels(load_campaign(_campaign(tmp_path, '["off", "60/85"]', {"target": "/dev/nvme0n1"})), drive)
    state = json.loads(fake_nvme.read_text())
    assert state["log"] and not any(line.startswith("set-feature") for line in state["log"])
    fake_nvme.write_text(json.dumps({**state, "id_ctrl": {"mn": "no hctm", "psds": []}}))
    with pytest.raises(CampaignError, match="does not report host-controlled thermal management"):
        check_hctm_levels(campaign, drive)
    check_hctm_levels(load_campaign(_campaign(tmp_path, '["off"]', {"target": "/dev/nvme0n1"})), drive)


def test_a_drive_without_thermal_management_records_nothing_and_takes_off_only(tmp_path: Path) -> None:
    drive = LocalDrive(str(tmp_path / "drive.dat"), size="16m")  # a file on this machine's (non-NVMe) disk
    lines: list[str] = []
    with run_thermal(drive, None, lines.extend, RunTags(rig="r", run="x")) as fields:
        assert fields == {}
    assert lines == []
    campaign = load_campaign(_campaign(tmp_path, '["off", "60/70"]', {"target": str(tmp_path / "drive.dat")}))
    with pytest.raises(CampaignError, match=r"\[factors\] hctm: .*drive.dat has no NVMe thermal management"):
        check_hctm_levels(campaign, drive)


def test_the_virtual_drive_runs_at_the_level_and_gets_its_own_value_back_on_ctrl_c() -> None:
    with SimulatedRig(SimConfig(drive="950pro_512", pacing=Pacing.stepped())) as rig:
        drive = SimulatedDrive(rig)
        model = rig.drive.model  # type: ignore[union-attr]
        own = hctm_value(80, 90)
        model.set_hctm(own)  # the value the drive had before the campaign
        tags = RunTags(rig="r", run="x", hctm="50-60")
        lines: list[str] = []
        with pytest.raises(KeyboardInterrupt), run_thermal(drive, HctmLevel(50, 60), lines.extend, tags) as fields:
            assert model.hctm == hctm_value(50, 60)
            raise KeyboardInterrupt
        assert model.hctm == own
        assert fields["hctm_level"] == "50/60" and fields["hctm_value"] == hctm_value(50, 60)
        assert (fields["tmt1_c"], fields["tmt2_c"]) == (49.85, 59.85)
        assert fields["hctm_supported"] is True and fields["mntmt_c"] == -0.15 and fields["mxtmt_c"] == 94.85
        assert [fields[f"ps{i}_max_power_w"] for i in range(4)] == [s.max_w for s in model.profile.states]
        assert "wctemp_c" not in fields  # the 950 Pro reports none: recorded without it
        start, restored = lines  # as the run starts, and once the drive's own value is back
        assert start.startswith("drive_thermal,") and "hctm=50-60" in start and 'hctm_level="50/60"' in start
        assert f"hctm_value={own}i" in restored and "hctm_restored=true" in restored.lower()
        with run_thermal(drive, HctmLevel(), lines.extend, tags) as off:
            assert model.hctm == 0 and off["hctm_value"] == 0
        with run_thermal(drive, None, lines.extend, tags) as untouched:
            assert untouched["hctm_value"] == own and "hctm_level" not in untouched
        assert model.hctm == own


@pytest.mark.timeout(900)
def test_a_campaign_throttles_the_virtual_drive_at_the_lowered_tmt1_and_records_it(
    tmp_path: Path, influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    """single_gpu_load, a 3 s write: with the drive's own thresholds it writes at full speed; with the
    host's TMT1 under its idle composite temperature the drive is throttled while it writes."""
    path = _campaign(tmp_path, '["off", "30/40"]')
    out = tmp_path / "runs"
    r = thermrig(*run_args(path, out), env=influx_env, timeout=880)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    by_level = {m["factors"]["hctm"]: m for m in manifests(out).values()}
    assert set(by_level) == {"off", "30/40"}
    low, off = by_level["30/40"]["drive_thermal"], by_level["off"]["drive_thermal"]
    assert low["hctm_value"] == hctm_value(30, 40) and off["hctm_value"] == 0
    assert low["mxtmt_c"] == off["mxtmt_c"] == 94.85 and off["ps3_max_power_w"] == 1.82
    where = "WHERE \"campaign\" = 'hctm' GROUP BY hctm"
    stored = influxql(influx, f"SELECT hctm_value, hctm_level FROM drive_thermal {where}")
    assert {s.tags["hctm"]: s.values[0][1:] for s in stored} == {
        "off": [0, "off"],
        "30-40": [hctm_value(30, 40), "30/40"],
    }
    deepest = {tag: _deepest_state_in_the_write(influx, tag) for tag in ("off", "30-40")}
    assert deepest["off"] == 0 and deepest["30-40"] > 0, deepest


def _deepest_state_in_the_write(influx: InfluxSettings, hctm: str) -> int:
    """The deepest power state the drive reported while the run at this level wrote: from its workload
    phase to its cool-down. Before the write the drive may still be leaving the previous run's throttle
    (it steps back to full speed once a step_s), which says nothing of this level's thresholds."""
    run = f"\"campaign\" = 'hctm' AND \"hctm\" = '{hctm}'"
    [events] = influxql(influx, f"SELECT detail FROM run_events WHERE {run} AND \"kind\" = 'phase'")
    starts = {detail.split()[0]: t for t, detail in events.values}
    window = f"time >= {starts['workload']} AND time < {starts['cooldown']}"
    [states] = influxql(influx, f"SELECT max(power_state) FROM drive_smart WHERE {run} AND {window}")
    return states.values[0][1]


@pytest.mark.timeout(300)
def test_ctrl_c_in_a_campaign_puts_the_drives_own_value_back(
    tmp_path: Path, influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    """Ctrl-C while fio writes at the host's 55/65: the run is aborted, and InfluxDB holds the level it ran
    at and, after it, the drive's own value (0: no host thresholds) read back once restored."""
    text = _campaign(tmp_path, '["55/65"]').read_text().replace("runtime_s = 3", "runtime_s = 60")
    path = tmp_path / "c.toml"
    path.write_text(text)
    proc = start_run(path, tmp_path / "runs", influx_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # into a pipe, the run prints a line as each phase starts
        seen.append(line)
        if ": workload" in line:
            break
    assert seen and ": workload" in seen[-1], "".join(seen)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    (manifest,) = manifests(tmp_path / "runs").values()
    assert manifest["status"] == "aborted"
    [series] = influxql(influx, "SELECT hctm_value, hctm_restored FROM drive_thermal WHERE \"campaign\" = 'hctm'")
    assert [row[1:] for row in series.values] == [[hctm_value(55, 65), None], [0, True]]
