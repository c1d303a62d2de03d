"""A file system on the virtual drive: ext4 made through the kernel (nbdfuse, a direct-I/O loop device,
mount), kept by the drive across a remount, and a campaign whose lab job (kind "fio") runs on a file in
it, recorded and summarised per job like any other. Needs root, FUSE and loop devices (a container
that lacks them skips, saying which: `make test` lists it at its end)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, manifests, run_args, thermrig
from nbd_clients import fio_json, nbdinfo_map
from skips import machine_cannot_if

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.virtual_drive.file_system import DriveFileSystem
from thermrig.virtual_drive.served import VirtualDrive

JOBS = Path(__file__).parent / "fio_jobs" / "verify"  # not lab jobs: test_lab_job takes fio_jobs/*.fio
MIB = 2**20


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    return next((f"no {dev}" for dev in ("/dev/fuse", "/dev/loop-control") if not Path(dev).exists()), None)


pytestmark = machine_cannot_if(_missing())  # a kernel mount needs root, FUSE and loop devices


@pytest.fixture
def drive() -> Iterator[VirtualDrive]:
    with VirtualDrive(load_drive_profile("950pro_512"), scale=0.1, keep_data=1 << 30) as d:
        yield d


def test_ext4_on_the_drive_holds_a_verified_file_across_a_remount(drive: VirtualDrive, tmp_path: Path) -> None:
    with DriveFileSystem(drive.uri, tmp_path / "fs") as fs:
        job = tmp_path / "verify.fio"
        job.write_text(
            f"[global]\nfilename={fs.mountpoint / 'f.dat'}\nioengine=libaio\n\n"
            + (JOBS / "basic-verify.fio").read_text()
        )
        (result,) = fio_json(str(job))["jobs"]
        assert result["error"] == 0 and result["read"]["total_ios"] == result["write"]["total_ios"] == 8192
        (fs.mountpoint / "note").write_bytes(b"kept\n" * 1000)
    data = [e for e in nbdinfo_map(drive.uri) if e["type"] == 0]
    assert sum(e["length"] for e in data) >= 32 * MIB  # the file's blocks and ext4's metadata, as data
    assert drive.store is not None and 32 * MIB <= drive.store.kept_bytes() < 256 * MIB
    with DriveFileSystem(drive.uri, tmp_path / "fs", make=False) as fs:  # the same file system, mounted again
        assert (fs.mountpoint / "note").read_bytes() == b"kept\n" * 1000
        assert (fs.mountpoint / "f.dat").stat().st_size == 32 * MIB
    r = subprocess.run(["mount"], capture_output=True, text=True)
    assert str(tmp_path) not in r.stdout  # unmounted, FUSE too


@pytest.mark.timeout(600)
def test_a_campaign_runs_a_lab_job_on_a_file_in_the_drives_file_system(
    tmp_path: Path, influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    """[drive] filesystem = "ext4": the campaign makes the file system, the lab's job (libaio, O_DIRECT, as
    a lab's job on a file says) writes then reads a file of [drive] size in it, each job's per-second log
    and summary recorded."""
    job = Path(__file__).parents[2] / "examples" / "jobs" / "lab-write-read.fio"
    lab = job.read_text().replace("runtime=40", "runtime=4")  # on a file, the engine is the lab's own:
    (tmp_path / "lab.fio").write_text(lab.replace("[global]\n", "[global]\nioengine=libaio\ndirect=1\n"))
    drive = {"target": "virtual", "profile": "950pro_512", "scale": 0.05, "keep_data": "2g", "filesystem": "ext4"}
    # the rig at 5x, not 10x: at 10x under a load average of 20-30 the rig lost its host (HOST_LOST) in 3 of
    # 9 runs with the file system's nbdfuse and kernel I/O beside it (0.3 s of real time without a ping)
    rig = {"port": "sim", "speed": 5}
    text = CampaignFile("labfs", {**drive, "size": "1g"}, rig).text().replace('kind = "seq_write"', 'kind = "fio"')
    text = text.replace('profile = ["single_gpu_load"]', 'profile = ["idle"]')  # no minutes of heating first
    path = tmp_path / "c.toml"
    path.write_text(text + 'job = "lab.fio"\n')
    out = tmp_path / "runs"
    r = thermrig(*run_args(path, out), env=influx_env, timeout=580)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (manifest,) = manifests(out).values()
    jobs = manifest["workload_result"]["jobs"]
    assert list(jobs) == ["seq-write", "rand-read"]
    assert all(j["seconds"] >= 3 and j["mean_bw_bps"] > 0 for j in jobs.values()), jobs
    composed = next(out.glob("*/job.fio")).read_text()
    assert "/mnt/thermrig-fio.dat" in composed and "direct=1" in composed and "ioengine=nbd" not in composed
    fio = json.loads(next(out.glob("*/fio.json")).read_text())
    assert fio["jobs"][0]["write"]["io_bytes"] > 0 and fio["jobs"][1]["read"]["io_bytes"] > 0
    where = "\"campaign\" = 'labfs'"
    stored = influxql(influx, f'SELECT count(bw_bps) FROM fio_interval WHERE {where} GROUP BY "job"')
    assert {s.tags["job"] for s in stored} == {"seq-write", "rand-read"}
    summaries = influxql(influx, f'SELECT onset_s, seconds FROM job_summary WHERE {where} GROUP BY "job"')
    assert {s.tags["job"]: s.values[0][2] for s in summaries} == {k: v["seconds"] for k, v in jobs.items()}
    assert str(tmp_path) not in subprocess.run(["mount"], capture_output=True, text=True).stdout
