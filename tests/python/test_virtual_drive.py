"""The virtual drive served to the real fio through its net engine: paced to the drive's state on plant
time, reads and writes, random patterns as IOPS, and the throttle visible in fio's own per-second log at
the moment the model throttled."""

from __future__ import annotations

import statistics
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from thermrig.analysis.throttle import per_second, throttle_of
from thermrig.calibration.profile_writer import set_values
from thermrig.db.local_server import free_port
from thermrig.fio.runner import FioResult, run_fio
from thermrig.fio.workloads import Target, Workload, WorkloadError, job_file, parse_size
from thermrig.link.rig_link import RigLink
from thermrig.plant.drive_model import Pattern
from thermrig.plant.simulated_rig import SimConfig, SimulatedRig

SCALE = 0.05


def _series(result: FioResult) -> list[float]:
    return per_second([p.timestamp_ms for p in result.bw], [p.value * 1024.0 for p in result.bw])


def _run(sim: SimulatedRig, kind: str, runtime_s: int, tmp_path: Path, bs: str = "") -> FioResult:
    assert sim.drive is not None
    w = Workload(name=kind, kind=kind, runtime_s=runtime_s, bs=bs).resolved()
    write = kind != "seq_read" and kind != "rand_read"
    port = sim.drive.port if write else free_port()
    sim.drive.announce(Pattern(write, kind.startswith("rand"), parse_size(w.bs)), None if write else port)
    job = job_file(w, Target("virtual", net_port=port), str(tmp_path / "fio"))
    return run_fio(job, tmp_path)


@pytest.fixture
def drive_sim() -> Iterator[SimulatedRig]:
    with SimulatedRig(SimConfig(speed=1.0, drive="950pro_512", drive_scale=SCALE)) as sim, RigLink(sim.port) as link:
        link.hello()  # a host reading the rig, as in a campaign
        yield sim


def test_sequential_write_runs_at_the_drive_speed_times_the_scale(drive_sim: SimulatedRig, tmp_path: Path) -> None:
    result = _run(drive_sim, "seq_write", 6, tmp_path)
    series = _series(result)
    expected = drive_sim.drive.model.profile.seq_write_bps * SCALE
    assert statistics.median(series[1:]) == pytest.approx(expected, rel=0.05)
    written = result.result["jobs"][0]["write"]["io_bytes"]
    # The drive counted what fio sent, at its own scale (NVMe data units of 512,000 bytes).
    units = drive_sim.drive.model.smart_log()["data_units_written"]
    assert units * 512_000 == pytest.approx(written / SCALE, rel=0.02)


def test_sequential_read_through_fio_listening(drive_sim: SimulatedRig, tmp_path: Path) -> None:
    series = _series(_run(drive_sim, "seq_read", 5, tmp_path))
    expected = drive_sim.drive.model.profile.seq_read_bps * SCALE
    assert statistics.median(series[1:]) == pytest.approx(expected, rel=0.05)


def test_random_writes_are_paced_as_iops(drive_sim: SimulatedRig, tmp_path: Path) -> None:
    result = _run(drive_sim, "rand_write", 5, tmp_path, bs="4k")
    iops = statistics.median(p.value for p in result.iops[1:])
    # a fresh drive: 110k IOPS at 4 KiB, times the scale
    assert iops == pytest.approx(drive_sim.drive.model.profile.rand_write_iops * SCALE, rel=0.05)


def test_mixed_workloads_need_a_real_drive() -> None:
    with pytest.raises(WorkloadError, match="needs a real drive"):
        job_file(Workload("mix", "mixed_random_sweep"), Target("virtual", net_port=1), "/tmp/x")


def test_net_jobs_parse_in_fio(tmp_path: Path) -> None:
    for kind in ("seq_write", "seq_read", "rand_write", "consistency"):
        job = tmp_path / f"{kind}.fio"
        job.write_text(job_file(Workload(kind, kind, runtime_s=5), Target("virtual", net_port=9), str(tmp_path)))
        r = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_the_throttle_shows_in_fios_log_when_the_model_throttled(tmp_path: Path, hardware_copy: Path) -> None:
    # a drive that throttles a few seconds into a write from room temperature
    set_values(hardware_copy / "drives.toml", "950pro_512", {"tmt1_c": "30.0"})
    cfg = SimConfig(speed=1.0, drive="950pro_512", drive_scale=SCALE, room_c=22.0)
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        link.hello()
        assert sim.drive is not None
        model = sim.drive.model
        started = sim.plant.t
        result = _run(sim, "seq_write", 36, tmp_path / "fio")
        first = next(t for t, state in model.transitions if state > 0)
        th = throttle_of(_series(result))
        assert th.onset_s is not None
        # fio's wall-clock log and the plant's clock agree on when the drive throttled (1 s log bins,
        # fio's start-up, the first step down taking 10 % off)
        assert th.onset_s == pytest.approx(first - started, abs=2.0)
        assert th.depth_pct > 20.0
        assert model.smart_log()["thm_temp1_trans_count"] >= 1
