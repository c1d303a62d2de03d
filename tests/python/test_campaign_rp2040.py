"""A campaign on stock MicroPython on the emulated RP2040 ([rig] firmware = "micropython-rp2040"): the plant,
the virtual drive under the real fio and InfluxDB, as on rigsim. The emulated core runs the interpreter's real
cycles, about 2.5 simulated seconds per CPU second: the campaign takes 2-3 minutes of wall time. make test
and `make conformance-rp2040` run it alone, after the whole conformance suite on that firmware: beside other
work the emulated chip falls behind the campaign's pings."""

from __future__ import annotations

from pathlib import Path

import pytest
from campaign_helpers import VIRTUAL_DRIVE, CampaignFile, manifests, run_args, thermrig

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql

CAMPAIGN_S = 900  # wall time a loaded 2-core machine may take for it
# one emulated chip at a time, as test_micropython_rp2040's: the chip wants a core, and starved of one the
# rig misses the campaign's first PINGs ("no reply ... after 4 tries")
pytestmark = pytest.mark.xdist_group("micropython-rp2040")


@pytest.mark.timeout(CAMPAIGN_S + 60)
def test_a_virtual_drive_campaign_on_stock_micropython_on_the_emulated_rp2040(
    tmp_path: Path, influx: InfluxSettings, influx_env: dict[str, str]
) -> None:
    rig = {"port": "sim", "speed": 10, "firmware": "micropython-rp2040"}
    path = CampaignFile("rc", VIRTUAL_DRIVE, rig=rig, runtime_s=4).write(tmp_path)
    r = thermrig(*run_args(path, tmp_path / "runs"), env=influx_env, timeout=CAMPAIGN_S)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [manifest] = manifests(tmp_path / "runs").values()
    assert manifest["status"] == "ok" and manifest["all_points_stored"]
    assert manifest["versions"]["firmware"].startswith("thermrig-micropython ")
    assert manifest["rig"]["board"] == "rp2040-pico"
    [s] = influxql(influx, "SELECT count(bw_bps) FROM fio_interval WHERE campaign = 'rc'")
    assert s.values[0][1] > 0
