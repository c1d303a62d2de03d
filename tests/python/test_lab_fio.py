"""fio on a place's test PC in fio's client/server mode: a real `fio --server` on a loopback port (the
test PC), the job run with `fio --client`, its per-interval logs brought back named per host."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import wait_for

from thermrig.db.local_server import free_port
from thermrig.fio.runner import FioError
from thermrig.lab.client import Endpoint
from thermrig.lab.remote_fio import run_remote_fio
from thermrig.lab_world.world import Proc

pytestmark = pytest.mark.timeout(120)


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def fio_server(tmp_path: Path) -> Iterator[Endpoint]:
    port = free_port()
    proc = Proc.start(["fio", f"--server=ip:127.0.0.1,{port}"], tmp_path)
    try:
        assert wait_for(lambda: answers(port), 30), proc.output()
        yield Endpoint("127.0.0.1", port)
    finally:
        proc.stop()


def job(drive: Path, prefix: Path) -> str:
    return f"""[global]
ioengine=psync
filename={drive}
size=4M
time_based=1
runtime=2
log_avg_msec=500
write_bw_log={prefix}
write_iops_log={prefix}
[seqread]
rw=read
bs=128k
"""


def test_a_job_runs_on_the_test_pc_and_its_logs_come_back_per_host(fio_server: Endpoint, tmp_path: Path) -> None:
    drive = tmp_path / "testpc" / "drive.bin"  # the test PC's drive: a path there
    drive.parent.mkdir()
    workdir = tmp_path / "run-1"
    result = run_remote_fio(job(drive, workdir.resolve() / "fio"), workdir, fio_server, "rig-a")
    assert (workdir / "fio_bw.1.log.127.0.0.1").exists() and (workdir / "fio.json").exists()
    assert [j["jobname"] for j in result.result["jobs"]] == ["seqread"]
    assert result.result["jobs"][0]["hostname"] == "127.0.0.1"
    assert result.result["jobs"][0]["read"]["io_bytes"] > 0
    assert len(result.bw) >= 2 and all(p.value > 0 and p.ddir == 0 for p in result.bw)
    assert len(result.iops) == len(result.bw)
    assert drive.stat().st_size == 4 * 1024 * 1024  # fio laid the file out on the "test PC"


def test_a_place_whose_fio_server_is_down_is_one_line(tmp_path: Path) -> None:
    port = free_port()
    with pytest.raises(FioError) as err:
        run_remote_fio(
            job(tmp_path / "d.bin", tmp_path / "fio"), tmp_path / "run", Endpoint("127.0.0.1", port), "rig-c"
        )
    assert str(err.value).startswith(f"place rig-c: its test PC's fio server at 127.0.0.1,{port} does not answer")
    assert "\n" not in str(err.value)
