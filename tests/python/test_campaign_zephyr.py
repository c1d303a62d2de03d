"""A campaign on the Zephyr firmware emulated in QEMU ([rig] firmware = "zephyr"): the plant, the
virtual drive under the real fio and InfluxDB, exactly as on rigsim."""

from __future__ import annotations

from pathlib import Path

from campaign_helpers import VIRTUAL_DRIVE, CampaignFile, manifests, run_args, thermrig

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql


def campaign(name: str, firmware: str) -> CampaignFile:
    return CampaignFile(name, VIRTUAL_DRIVE, rig={"port": "sim", "speed": 10, "firmware": firmware}, runtime_s=4)


def test_a_virtual_drive_campaign_on_the_emulated_firmware(
    tmp_path: Path, influx: InfluxSettings, influx_env: dict[str, str]
) -> None:
    bad = campaign("bad", "arduino").write(tmp_path)
    r = thermrig("plan", str(bad), env=influx_env)
    assert r.returncode == 1 and "[rig] firmware: 'arduino'" in r.stderr and "zephyr" in r.stderr

    path = campaign("zc", "zephyr").write(tmp_path)
    r = thermrig(*run_args(path, tmp_path / "runs"), env=influx_env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [manifest] = manifests(tmp_path / "runs").values()
    assert manifest["status"] == "ok" and manifest["all_points_stored"]
    assert manifest["versions"]["firmware"].startswith("thermrig-zephyr ")
    assert manifest["rig"]["board"] == "qemu_cortex_m3"
    [s] = influxql(influx, "SELECT count(bw_bps) FROM fio_interval WHERE campaign = 'zc'")
    assert s.values[0][1] > 0
