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
from stalled_fio import stall_once

from thermrig.campaign.spec import CampaignError, load_campaign
from thermrig.db.influx_settings import InfluxSettings
from thermrig.drive.under_test import LocalDrive
from thermrig.dut.pacing import Pacing
from thermrig.fio.rate_search import held, plateau, run_rate_search, series_of
from thermrig.fio.workload_run import run_workload
from thermrig.fio.workload_setup import WorkloadSetup
from thermrig.fio.workloads import Workload
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.report.build import write_report
from thermrig.sim.drive_under_test import SimulatedDrive
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig


def test_a_step_holds_unless_two_seconds_in_a_row_fall_short() -> None:
    assert held([10, 100, 95, 85, 100, 91], 100)  # the first second is partial; one slow second is not a throttle
    assert not held([100, 100, 85, 80, 100], 100)
    assert Workload("r", "rate_search").resolved().max_rounds == 6  # steps
    assert Workload("r", "rate_search", max_rounds=3, runtime_s=20).resolved().duration_s() == 60


def test_on_a_file_the_full_rate_holds_in_one_step(tmp_path: Path) -> None:
    w = Workload("r", "rate_search", runtime_s=3, max_rounds=3).resolved()
    calls: list[int] = []
    setup = WorkloadSetup(
        LocalDrive(str(tmp_path / "d.dat"), "64m"), tmp_path / "run", lambda s: None, threading.Event(), lambda n: None
    )
    ran = run_workload(w, setup, between=lambda: calls.append(1))
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


def test_a_host_stall_in_the_first_step_does_not_lower_the_full_rate(tmp_path: Path) -> None:
    """fio stopped for 1.5 s at its first second of writing (a busy host that does not schedule it): fio's
    own seconds 2-4 fall, the drive had nothing to do meanwhile by its own account, and the full rate, its
    bytes over the time it was fed, is still the drive's."""
    cardea = load_drive_profile("cardea_iops_1tb")
    config = SimConfig(pacing=Pacing.accelerated(1.0), drive="cardea_iops_1tb", drive_scale=0.02)
    stopped: list[int] = []
    notes: list[str] = []
    stop = threading.Event()

    def note(text: str) -> None:
        notes.append(text)
        stop.set()  # the first step alone: its full rate is what is judged

    with SimulatedRig(config) as sim:
        search = run_rate_search(
            Workload("r", "rate_search", runtime_s=8, max_rounds=2).resolved(),
            WorkloadSetup(SimulatedDrive(sim), tmp_path, stall_once(1.5, stopped), stop, note),
            0.02,
            None,
        )
    fio_full = plateau([v / 0.02 for v in series_of(search.results[0])])
    assert stopped and fio_full < 0.8 * cardea.seq_write_bps, (fio_full, notes)  # the stall took fio's seconds
    assert search.full_bps == pytest.approx(cardea.seq_write_bps, rel=0.1), (fio_full, notes)
    assert len(search.steps) == 1 and "fed" in notes[0], notes


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
