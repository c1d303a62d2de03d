"""Campaigns run for real: the simulated rig, the real fio on a file, a private influxd. Equilibrium on
the plant; two runs end to end; a killed campaign resumed; Ctrl-C; refusal of a target holding data."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, file_drive, manifests, run_args, run_ids, start_run, thermrig
from influx_servers import ON_BOTH

from thermrig.campaign.equilibrium import EquilibriumWatch
from thermrig.campaign.spec import Equilibrium
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimulatedRig


def campaign(tmp_path: Path, name: str, *slots: str) -> Path:
    return CampaignFile(name, file_drive(tmp_path, "64m"), seed=5, slots=slots).write(tmp_path)


def test_equilibrium_is_judged_on_the_plant(link: RigLink, sim: SimulatedRig) -> None:
    watch = EquilibriumWatch(Equilibrium(rate_c_per_min=0.2, window_s=60, channels=("chassis_air", "drive_ctrl")))
    link.set(air=4000, heat=1, fan0=400)
    reached_at, frames = None, 0
    for second in range(1, 901):
        link.ping()
        sim.advance(1.0)
        for tel in link.collect_telemetry(10 * second - frames, timeout=2):
            watch.add(tel)
            frames += 1
        if second == 60:
            assert not watch.reached()  # still climbing
        if watch.reached():
            reached_at = second
            break
    assert reached_at is not None and 120 < reached_at < 900
    assert abs(sim.plant.state.air - 40.0) < 0.5  # the chassis really is at its target
    assert all(abs(r) < 0.2 for r in watch.rates_c_per_min().values())


@ON_BOTH
def test_two_runs_end_to_end_into_influxdb(tmp_path: Path, influx: InfluxSettings, influx_env: dict[str, str]) -> None:
    path = campaign(tmp_path, "e2e", "top", "underside")
    plan = thermrig("plan", str(path), "--no-model", env=influx_env)
    said = " ".join(plan.stdout.split())  # the summary wraps at COLUMNS, longer with this worker's history
    assert plan.returncode == 0 and "2 runs" in said and "1 hardware changes" in said, plan.stdout
    r = thermrig(*run_args(path, tmp_path / "runs"), env=influx_env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    runs = manifests(tmp_path / "runs")
    assert set(runs) == run_ids(tmp_path / "runs", "e2e", 2)
    for run_id, m in runs.items():
        assert m["status"] == "ok" and m["all_points_stored"] and m["equilibrium"]["reached"]
        assert m["versions"]["fio"].startswith("fio-") and m["versions"]["firmware"].startswith("thermrig-core")
        assert m["seed"] == 5 and m["factors"]["profile"] == "single_gpu_load"
        assert m["drive"]["telemetry"] in ("none",) or m["drive"]["telemetry"].startswith("nvme smart-log")
        assert {"device_serial", "device_model", "device_firmware"} <= set(m["drive"])  # the identity collected
        assert (tmp_path / "runs" / run_id / "fio.json").exists()
        for measurement, field in (("rig_telemetry", "uptime_ms"), ("fio_interval", "bw_bps"), ("fio_live", "bw_bps")):
            [s] = influxql(influx, f"SELECT count({field}) FROM {measurement} WHERE run = '{run_id}'")
            assert s.values[0][1] > 0, (run_id, measurement)
        phases = influxql(influx, f"SELECT detail FROM run_events WHERE run = '{run_id}' AND kind = 'phase'")
        assert [v[1].split()[0] for v in phases[0].values] == ["equilibrium", "baseline", "workload", "cooldown"]
    by_slot = influxql(influx, "SELECT count(bw_bps) FROM fio_interval WHERE campaign = 'e2e' GROUP BY slot")
    assert {s.tags["slot"] for s in by_slot} == {"top", "underside"}  # the factors are tags to group by
    again = thermrig(*run_args(path, tmp_path / "runs"), env=influx_env)
    assert again.returncode == 1 and "pass --resume" in again.stderr


@pytest.mark.timeout(900)  # three runs and a resume on a loaded machine
def test_a_killed_campaign_resumes_where_it_stopped(
    tmp_path: Path, influx: InfluxSettings, influx_env: dict[str, str]
) -> None:
    path = campaign(tmp_path, "resume", "top", "bottom", "underside")
    out = tmp_path / "runs"
    proc = start_run(path, out, influx_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = out / "state.json"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # one run done and the next one begun
        done = json.loads(state.read_text())["completed"] if state.exists() else []
        if done and any(m.get("status") == "running" for m in manifests(out).values()):
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = json.loads(state.read_text())["completed"]
    assert 1 <= len(done_before) < 3
    first = manifests(out)[done_before[0]]
    killed = {run: m for run, m in manifests(out).items() if run not in done_before}  # the run cut short
    assert len(killed) == 1
    r = thermrig(*run_args(path, out), "--resume", env=influx_env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    plan_ids = run_ids(out, "resume", 3)
    assert set(json.loads(state.read_text())["completed"]) == plan_ids
    after = manifests(out)
    assert after[done_before[0]]["start_utc"] == first["start_utc"]  # not run twice
    # A run cut short keeps its folder and its points under its own ID; its retry records under ID.2, so no
    # run ID holds two attempts' telemetry and fio logs.
    for run, m in killed.items():
        assert after[run]["start_utc"] == m["start_utc"] and after[run]["status"] == "running"
        retry = after[f"{run}.2"]
        assert retry["status"] == "ok" and retry["attempt"] == 2 and retry["plan_run"] == run
    assert set(after) == plan_ids | {f"{run}.2" for run in killed}
    assert all(after[run]["status"] == "ok" for run in set(after) - set(killed))
    for run in set(after) - set(killed):
        [s] = influxql(influx, f"SELECT count(detail) FROM run_events WHERE run = '{run}' AND kind = 'run_start'")
        assert s.values[0][1] == 1, run


def test_ctrl_c_leaves_the_run_aborted_and_the_data_flushed(
    tmp_path: Path, influx: InfluxSettings, influx_env: dict[str, str]
) -> None:
    path = campaign(tmp_path, "abort", "top")
    out = tmp_path / "runs"
    proc = start_run(path, out, influx_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    before = []
    for line in proc.stdout:  # into a pipe, the run prints a line as each phase starts
        before.append(line)
        if "run 1/1" in line and ": equilibrium" in line:
            break
    assert before and ": equilibrium" in before[-1], "".join(before)
    proc.send_signal(signal.SIGINT)  # inside the equilibrium phase
    rest, _ = proc.communicate(timeout=60)
    stdout = "".join(before) + rest
    assert proc.returncode == 130
    assert "--resume" in stdout
    [m] = manifests(out).values()
    assert m["status"] == "aborted" and m["all_points_stored"]
    assert json.loads((out / "state.json").read_text())["completed"] == []
    [run_id] = run_ids(out, "abort", 1)
    [s] = influxql(influx, f"SELECT detail FROM run_events WHERE run = '{run_id}' AND kind = 'run_stop'")
    assert s.values[0][1] == "aborted"


def test_a_target_holding_data_is_refused(tmp_path: Path, influx_env: dict[str, str]) -> None:
    path = campaign(tmp_path, "refuse", "top")
    drive = tmp_path / "drive.dat"
    drive.write_bytes(b"\0" * (8 << 20))
    subprocess.run(["sfdisk", "-q", str(drive)], input="label: gpt\n,4M\n", text=True, check=True)
    r = thermrig(*run_args(path, tmp_path / "runs"), env=influx_env)
    assert r.returncode == 1 and "refusing to write" in r.stderr and "gpt" in r.stderr
    missing = path.read_text().replace(f'target = "{drive}"', 'target = "/dev/thermrig-no-such-disk"')
    path.write_text(missing)
    r = thermrig(*run_args(path, tmp_path / "runs2"), env=influx_env)
    assert r.returncode == 1 and "is not a block device on this machine" in r.stderr
