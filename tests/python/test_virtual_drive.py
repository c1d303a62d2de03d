"""The virtual drive served to the real fio as a block device over NBD: rates and queue depth as the
model serves them, the model seeing offsets (fill by LBA, TRIM), the throttle visible in fio's own
per-second log when the model throttled, and bad input met with the protocol's error replies while the
server keeps serving."""

from __future__ import annotations

import socket
import statistics
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from thermrig.analysis.throttle import per_second, throttle_of
from thermrig.calibration.profile_writer import set_values
from thermrig.drive.under_test import NbdExport
from thermrig.dut.pacing import Pacing
from thermrig.fio.runner import FioResult, run_fio
from thermrig.fio.workloads import KINDS, Workload, job_file
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.virtual_drive import nbd_protocol as nbd
from thermrig.virtual_drive.lba_map import CHUNK
from thermrig.virtual_drive.served import VirtualDrive

SCALE = 0.05


def _series(result: FioResult) -> list[float]:
    return per_second([p.timestamp_ms for p in result.bw], [p.value * 1024.0 for p in result.bw])


def _run(sim: SimulatedRig, w: Workload, tmp_path: Path) -> FioResult:
    assert sim.drive is not None
    return run_fio(job_file(w, NbdExport(sim.drive.uri), str(tmp_path / "fio")), tmp_path)


@pytest.fixture
def drive_sim() -> Iterator[SimulatedRig]:
    with (
        SimulatedRig(SimConfig(pacing=Pacing.accelerated(1.0), drive="950pro_512", drive_scale=SCALE)) as sim,
        RigLink(sim.port) as link,
    ):
        link.hello()  # a host reading the rig, as in a campaign
        yield sim


def test_sequential_write_runs_at_the_drive_speed_times_the_scale(drive_sim: SimulatedRig, tmp_path: Path) -> None:
    result = _run(drive_sim, Workload("w", "seq_write", runtime_s=6), tmp_path)
    series = _series(result)
    assert drive_sim.drive is not None
    expected = drive_sim.drive.model.profile.seq_write_bps * SCALE
    assert statistics.median(series[1:]) == pytest.approx(expected, rel=0.1)
    written = result.result["jobs"][0]["write"]["io_bytes"]
    # The drive counted what fio sent, at its own scale (NVMe data units of 512,000 bytes).
    units = drive_sim.drive.model.smart_log()["data_units_written"]
    assert units * 512_000 == pytest.approx(written / SCALE, rel=0.02)


def test_queue_depth_sets_random_read_iops_as_published(tmp_path: Path) -> None:
    p = load_drive_profile("950pro_512")
    scale = 0.02  # 6,000 IOPS on the wire at QD32: within reach of a loaded machine
    drive = VirtualDrive(p, scale)
    got = {}
    try:
        for qd in (1, 32):
            w = Workload(f"qd{qd}", "rand_read", runtime_s=4, iodepth=qd, span="1g")
            job = job_file(w, NbdExport(drive.uri), str(tmp_path / f"qd{qd}" / "fio"))
            got[qd] = run_fio(job, tmp_path / f"qd{qd}").result["jobs"][0]["read"]["iops"]
    finally:
        drive.close()
    # QD1: one request at a time, each its QD1 service time (the wire's own turnaround taken off it);
    # QD32: the drive's peak. The data sheet's 12K vs 300K, times the scale.
    assert got[1] == pytest.approx(p.qd1_rand_read_iops * scale, rel=0.15)
    assert got[32] == pytest.approx(p.rand_read_iops * scale, rel=0.15)  # a loaded host loses a little


def test_mixed_random_writes_map_their_span_and_trim_frees_it(drive_sim: SimulatedRig, tmp_path: Path) -> None:
    assert drive_sim.drive is not None
    model = drive_sim.drive.model
    mix = Workload("mix", "mixed_random_sweep", runtime_s=2, span="64m", steps=(70,), iodepth=8)
    result = _run(drive_sim, mix, tmp_path / "mix")
    job = result.result["jobs"][0]
    assert job["read"]["io_bytes"] > 0 and job["write"]["io_bytes"] > 0
    assert 0 < model.filled <= 64 * 2**20  # only the span, by LBA
    trim = f"[global]\nioengine=nbd\nuri={drive_sim.drive.uri}\nsize=64m\nbs=1m\n[t]\nrw=trim\n"
    (tmp_path / "trim.fio").write_text(trim)
    r = subprocess.run(["fio", str(tmp_path / "trim.fio")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert model.filled == 0


def test_every_kind_parses_in_fio_as_an_nbd_job(tmp_path: Path) -> None:
    for kind in KINDS:
        job = tmp_path / f"{kind}.fio"
        uri = "nbd+unix:///?socket=/tmp/none.sock"
        job.write_text(job_file(Workload(kind, kind, runtime_s=5), NbdExport(uri), str(tmp_path)))
        r = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "ioengine=nbd" in job.read_text()


def test_the_throttle_shows_in_fios_log_when_the_model_throttled(tmp_path: Path, hardware_copy: Path) -> None:
    # a drive that throttles a few seconds into a write from room temperature
    set_values(hardware_copy / "drives.toml", "950pro_512", {"tmt1_c": "30.0"})
    cfg = SimConfig(pacing=Pacing.accelerated(1.0), drive="950pro_512", drive_scale=SCALE, room_c=22.0)
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        link.hello()
        assert sim.drive is not None
        model = sim.drive.model
        started = sim.plant.t
        result = _run(sim, Workload("w", "seq_write", runtime_s=36), tmp_path / "fio")
        first = next(t for t, state in model.transitions if state > 0)
        th = throttle_of(_series(result))
        assert th.onset_s is not None
        # fio's wall-clock log and the plant's clock agree on when the drive throttled (1 s log bins,
        # fio's start-up, the first step down taking 10 % off)
        assert th.onset_s == pytest.approx(first - started, abs=2.0)
        assert th.depth_pct > 20.0
        assert model.smart_log()["thm_temp1_trans_count"] >= 1


# --- the protocol with a raw client ---------------------------------------------------------------


class RawClient:
    """Just enough of an NBD client to send what fio never would."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(path)
        hello = self._recv(18)
        assert hello[:16] == nbd.NBDMAGIC + nbd.IHAVEOPT
        self.sock.sendall(struct.pack(">I", nbd.FLAG_FIXED_NEWSTYLE | nbd.FLAG_NO_ZEROES))
        self.sock.sendall(nbd.OPTION.pack(nbd.IHAVEOPT, nbd.OPT_GO, 6) + struct.pack(">IH", 0, 0))
        self.size = 0
        while True:
            _, _, kind, length = struct.unpack(">QIII", self._recv(20))
            data = self._recv(length)
            if kind == nbd.REP_INFO and struct.unpack(">H", data[:2])[0] == nbd.INFO_EXPORT:
                self.size = struct.unpack(">Q", data[2:10])[0]
            if kind == nbd.REP_ACK:
                break

    def _recv(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            more = self.sock.recv(n - len(data))
            if not more:
                raise ConnectionError("server closed")
            data += more
        return data

    def send(self, cmd: int, offset: int, length: int, cookie: int = 1, payload: bytes | None = None) -> None:
        self.sock.sendall(nbd.REQUEST.pack(nbd.REQUEST_MAGIC, 0, cmd, cookie, offset, length))
        if cmd == nbd.CMD_WRITE:
            self.sock.sendall(bytes(length) if payload is None else payload)

    def reply(self, read: int = 0) -> tuple[int, int, bytes]:
        magic, error, cookie = nbd.REPLY.unpack(self._recv(nbd.REPLY.size))
        assert magic == nbd.SIMPLE_REPLY_MAGIC
        return error, cookie, self._recv(read) if read and not error else b""

    def request(self, cmd: int, offset: int, length: int) -> tuple[int, bytes]:
        self.send(cmd, offset, length)
        error, _, data = self.reply(length if cmd == nbd.CMD_READ else 0)
        return error, data

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def drive() -> Iterator[VirtualDrive]:
    d = VirtualDrive(load_drive_profile("950pro_512"), scale=1.0)
    yield d
    d.close()


def test_bad_requests_get_the_protocols_errors_and_the_connection_goes_on(drive: VirtualDrive) -> None:
    c = RawClient(drive.socket_path)
    size = c.size
    assert size == drive.model.profile.capacity_bytes
    assert c.request(nbd.CMD_READ, size - 4096, 8192)[0] == nbd.EINVAL  # past the end
    assert c.request(nbd.CMD_WRITE, size - 4096, 8192)[0] == nbd.ENOSPC  # payload still taken
    assert c.request(nbd.CMD_READ, 100, 4096)[0] == nbd.EINVAL  # misaligned
    assert c.request(nbd.CMD_WRITE, 0, 1000)[0] == nbd.EINVAL  # not whole sectors
    assert c.request(nbd.CMD_READ, 0, 0)[0] == nbd.EINVAL
    assert c.request(9, 0, 4096)[0] == nbd.EINVAL  # no such command
    assert c.request(nbd.CMD_TRIM, size, 4096)[0] == nbd.EINVAL
    assert drive.model.bytes_written == 0 and drive.model.filled == 0  # none of it reached the drive
    error, data = c.request(nbd.CMD_READ, 0, 8192)
    assert error == 0 and data == bytes(8192)  # reads return zeros
    assert c.request(nbd.CMD_WRITE, size - 4096, 4096)[0] == 0  # the last sector
    assert c.request(nbd.CMD_FLUSH, 0, 0)[0] == 0
    assert drive.model.bytes_written == 4096 and drive.model.filled > 0
    assert c.request(nbd.CMD_TRIM, size - 2**31, 2**31)[0] == 0  # to the end: the partial last chunk too
    assert drive.model.filled == 0
    c.close()


def test_a_client_leaving_mid_request_and_two_at_once(drive: VirtualDrive) -> None:
    gone = RawClient(drive.socket_path)
    gone.send(nbd.CMD_WRITE, 0, 4096)  # served in full
    gone.sock.sendall(nbd.REQUEST.pack(nbd.REQUEST_MAGIC, 0, nbd.CMD_WRITE, 2, 1 << 20, 65536) + bytes(1000))
    gone.close()  # mid-payload
    a, b = RawClient(drive.socket_path), RawClient(drive.socket_path)
    for i in range(20):  # interleaved, each with its own cookies
        a.send(nbd.CMD_WRITE, i * 4096, 4096, cookie=100 + i)
        b.send(nbd.CMD_READ, i * 4096, 4096, cookie=200 + i)
    assert sorted(a.reply()[1] for _ in range(20)) == list(range(100, 120))
    assert sorted(b.reply(4096)[1] for _ in range(20)) == list(range(200, 220))
    a.close()
    b.close()
    # the first client's complete write and a's twenty count; the half-sent one never reached the drive
    assert drive.model.bytes_written == 21 * 4096
    assert drive.model.filled == CHUNK * 2  # LBAs 0-80 KiB: two 64 KiB chunks; nothing at 1 MiB


def test_a_request_with_a_bad_magic_closes_that_connection_only(drive: VirtualDrive) -> None:
    bad = RawClient(drive.socket_path)
    bad.sock.sendall(b"\x00" * nbd.REQUEST.size)
    assert bad.sock.recv(16) == b""  # the server hung up
    good = RawClient(drive.socket_path)
    assert good.request(nbd.CMD_READ, 0, 4096)[0] == 0
    good.close()


def test_a_fast_fill_leaves_the_fill_out_of_the_job_and_the_real_path_keeps_it(tmp_path: Path) -> None:
    uri = "nbd+unix:///?socket=/tmp/none.sock"
    drive = NbdExport(uri)
    consistency = Workload("c", "consistency", runtime_s=5)
    assert "[c-fill]" not in job_file(consistency, drive, str(tmp_path), prefilled=True)
    assert "[c-fill]" in job_file(consistency, drive, str(tmp_path))
    precondition = Workload("p", "snia_precondition")
    assert "number_ios=1" in job_file(precondition, drive, str(tmp_path), prefilled=True)
    assert "loops=2" in job_file(precondition, drive, str(tmp_path))


def test_real_fio_misaligned_gets_einval_and_two_fios_at_once_are_served(drive: VirtualDrive, tmp_path: Path) -> None:
    def fio(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = ["fio", "--name=j", "--ioengine=nbd", f"--uri={drive.uri}", "--size=16m", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    bad = fio("--rw=read", "--bs=1000")  # not whole 512 B sectors
    assert bad.returncode != 0 and "Invalid argument" in bad.stdout + bad.stderr
    two = fio("--rw=randwrite", "--bs=4k", "--numjobs=2", "--iodepth=4", "--number_ios=500", "--group_reporting")
    assert two.returncode == 0, two.stderr
    assert drive.model.bytes_written == 2 * 500 * 4096  # both clients' writes, and nothing of the bad job
    assert 0 < drive.model.filled <= 16 * 2**20
