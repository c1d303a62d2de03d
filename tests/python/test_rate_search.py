"""The sustainable write rate (kind "rate_search"): fio's rate= by bisection, equilibrium between steps.
On a file (nothing throttles: the full rate holds at once) and on the virtual drive with an SLC cache
over NBD, where the full rate and half of it run out of cache within the stated time and a quarter
holds: a real bisection on the real fio, the rig back at equilibrium between steps, and the report's
table from InfluxDB."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, manifests, run_args, thermrig

from thermrig.campaign.spec import CampaignError, load_campaign
from thermrig.db.settings import InfluxSettings
from thermrig.drive.under_test import LocalDrive
from thermrig.fio.kinds import run_workload
from thermrig.fio.rate_search import held
from thermrig.fio.workloads import Workload
from thermrig.report.build import write_report


def test_a_step_holds_unless_two_seconds_in_a_row_fall_short() -> None:
    assert held([10, 100, 95, 85, 100, 91], 100)  # the first second is partial; one slow second is not a throttle
    assert not held([100, 100, 85, 80, 100], 100)
    assert Workload("r", "rate_search").resolved().max_rounds == 6  # steps
    assert Workload("r", "rate_search", max_rounds=3, runtime_s=20).duration_s() == 60


def test_on_a_file_the_full_rate_holds_in_one_step(tmp_path: Path) -> None:
    w = Workload("r", "rate_search", runtime_s=3, max_rounds=3).resolved()
    calls: list[int] = []
    ran = run_workload(
        w,
        LocalDrive(str(tmp_path / "d.dat"), "64m"),
        tmp_path / "run",
        lambda s: None,
        threading.Event(),
        lambda n: None,
        between=lambda: calls.append(1),
    )
    assert ran.figures["search_steps"] == 1 and calls == []  # held at once: no second step, no equilibrium
    assert ran.figures["sustainable_bps"] == ran.figures["full_rate_bps"] > 0
    steps = json.loads((tmp_path / "run" / "rate_search.json").read_text())
    assert steps[0]["rate_bps"] is None and steps[0]["held"] is True


def test_bad_rate_search_settings_are_refused(tmp_path: Path) -> None:
    text = CampaignFile("rs", {"target": "virtual"}).text().replace('kind = "seq_write"', 'kind = "rate_search"')
    path = tmp_path / "c.toml"
    path.write_text(text + "max_rounds = 1\n")
    with pytest.raises(CampaignError, match=r"\[workload\] max_rounds: .*a rate search bisects 2-25 times"):
        load_campaign(path)


@pytest.mark.timeout(900)
@pytest.mark.timed_world
def test_the_search_bisects_on_the_cached_virtual_drive(
    tmp_path: Path, influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    drive = {"target": "virtual", "profile": "cardea_iops_1tb", "scale": 0.02}
    text = CampaignFile("rs", drive, runtime_s=20).text().replace('kind = "seq_write"', 'kind = "rate_search"')
    path = tmp_path / "c.toml"
    path.write_text(text.replace('profile = ["single_gpu_load"]', 'profile = ["idle"]') + "max_rounds = 3\n")
    out = tmp_path / "runs"
    r = thermrig(*run_args(path, out), env=influx_env, timeout=880)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (manifest,) = manifests(out).values()
    result = manifest["workload_result"]
    steps = json.loads(next(out.glob("*/rate_search.json")).read_text())
    # 3 GB/s runs out of cache after 22 GB (7 s), 1.5 GB/s after 15 s: both fall to 1.2 GB/s within the 20 s;
    # 0.75 GB/s holds. Each step started with the cache folded back (equilibrium between steps).
    full = result["full_rate_bps"]
    assert [s["held"] for s in steps] == [False, False, True], (steps, full)  # each step's rate and median
    assert full == pytest.approx(3e9, rel=0.1)
    assert [s["rate_bps"] for s in steps[1:]] == pytest.approx([full / 2, full / 4])
    assert result["sustainable_bps"] == pytest.approx(full / 4) and result["search_steps"] == 3
    assert sorted(p.name for p in next(out.glob("rs-*")).glob("step-*")) == ["step-01", "step-02", "step-03"]
    report = write_report(influx, "rs", tmp_path / "report")
    table = json.loads((tmp_path / "report" / "sustainable_rates.json").read_text())
    assert report.html.exists() and f"{full / 4 / 1e6:,.0f}" in json.dumps(table)
