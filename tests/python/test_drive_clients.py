"""The virtual drive (nbdkit with the project's plugin) under clients nobody on this project wrote:
libnbd (nbdsh's bindings), nbdinfo, qemu-io and fio. Bad requests get the protocol's errors and reach
nothing; the plugin times requests as the model does; every job of a wide fio connects; requests in
flight are answered before a disconnect; unaligned TRIM; block status from the LBA map; unknown
exports refused; replies waiting for a client hold no memory; no burst beats the rate ceiling; a
server that dies is noticed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nbd_clients import fio_json, libnbd, libnbd_errno, nbdinfo_map, rss_kib

from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.virtual_drive.drive_model import DriveModel
from thermrig.virtual_drive.lba_map import CHUNK
from thermrig.virtual_drive.served import DriveServerError, VirtualDrive

MIB = 2**20


@pytest.fixture
def drive() -> Iterator[VirtualDrive]:
    with VirtualDrive(load_drive_profile("950pro_512"), scale=1.0) as d:
        yield d


def test_bad_requests_get_the_protocols_errors_and_reach_nothing(drive: VirtualDrive) -> None:
    size = drive.size
    bad = {
        "read past the end": (f"h.pread(8192, {size - 4096})", "EINVAL"),
        "write past the end": (f"h.pwrite(bytearray(8192), {size - 4096})", "ENOSPC"),
        "read not on a sector": ("h.pread(4096, 100)", "EINVAL"),
        "write not whole sectors": ("h.pwrite(bytearray(1000), 0)", "EINVAL"),
        "empty read": ("h.pread(0, 0)", "EINVAL"),
        "trim past the end": (f"h.trim(4096, {size})", "EINVAL"),
    }
    for what, (call, errno) in bad.items():
        assert libnbd(libnbd_errno(call), drive.uri) == errno, what
    assert drive.accounts().requests == 0 and drive.collect().bytes_written == 0 and drive.model.filled == 0
    got = libnbd(
        f"""
ok = h.pread(8192, 0) == bytes(8192)  # reads return zeros
h.pwrite(bytearray(4096), {size - 4096})  # the last sector
h.flush()
print(json.dumps([ok, h.get_size()]))
""",
        drive.uri,
    )
    assert got == [True, size]
    assert drive.collect().bytes_written == 4096 and drive.model.filled > 0
    assert libnbd(libnbd_errno(f"h.trim({2**31}, {size - 2**31})"), drive.uri) == ""  # the partial last chunk too
    assert drive.model.filled == 0


def test_the_plugin_times_requests_as_the_model_does(drive: VirtualDrive) -> None:
    """Same formula in C and in Python: the service the plugin gave each request, against
    DriveModel.serve on a model in the same state (fresh; read-ahead; throttled; garbage-collecting)."""
    model = DriveModel(drive.model.profile)

    def served(call: str) -> tuple[float, float]:
        libnbd(call + "\nprint(1)", drive.uri)
        a = drive.accounts()
        return a.last_occupancy, a.last_latency

    def check(call: str, write: bool, offset: int, length: int) -> None:
        s = model.serve(write, offset, length)
        assert served(call) == pytest.approx((s.occupancy, s.latency), rel=1e-12), call

    check("h.pwrite(bytearray(4096), 0)", True, 0, 4096)
    check("h.pwrite(bytearray(131072), 4096)", True, 4096, 131072)  # continues the last write
    check(f"h.pread(131072, {1 << 30})", False, 1 << 30, 131072)
    check(f"h.pread(131072, {(1 << 30) + 131072})", False, (1 << 30) + 131072, 131072)  # read-ahead
    for m in (model, drive.model):  # a throttle allowance halfway down
        m.allow_w = (m.profile.states[0].max_w + m.profile.states[-1].max_w) / 2
    drive.publish()
    model.tick(0.0, 25.0, 25.0)  # the model forgets its cached services each tick
    assert model.cap_fraction(True) < 1
    check(f"h.pwrite(bytearray(65536), {5 << 30})", True, 5 << 30, 65536)
    check(f"h.pread(4096, {7 << 30})", False, 7 << 30, 4096)
    for m in (model, drive.model):  # spare area used up: random writes wait for garbage collection
        m.precondition()
    drive.publish()
    model.tick(0.0, 25.0, 25.0)
    check(f"h.pwrite(bytearray(4096), {9 << 30})", True, 9 << 30, 4096)


def test_fio_with_64_jobs_connects_every_job() -> None:
    with VirtualDrive(load_drive_profile("950pro_512"), scale=0.1) as d:
        out = fio_json(
            "--name=j", "--ioengine=nbd", f"--uri={d.uri}", "--rw=randread", "--bs=4k", "--size=64m",
            "--numjobs=64", "--iodepth=4", "--number_ios=50",
        )  # fmt: skip
        jobs = out["jobs"]
        assert len(jobs) == 64 and all(j["error"] == 0 and j["read"]["total_ios"] == 50 for j in jobs)
        assert d.accounts().requests == 64 * 50


def test_requests_in_flight_are_answered_before_a_disconnect() -> None:
    """NBD_CMD_DISC after eight 1 MiB reads still in the pipeline (30 ms of them at scale 0.1): the
    server answers all eight before it closes, none is dropped. Those the plugin had taken complete with
    their data; nbdkit 1.32 answers any its worker threads had read but not yet started ESHUTDOWN (it
    checks the connection's status after the DISC was read; later nbdkit reads it with the request). On a
    busy machine its reader can take the DISC before any worker starts a read: then all eight are."""
    with VirtualDrive(load_drive_profile("950pro_512"), scale=0.1) as d:
        got = libnbd(
            """
bufs = [nbd.Buffer(1 << 20) for _ in range(8)]
cookies = [h.aio_pread(b, i << 20) for i, b in enumerate(bufs)]
h.aio_disconnect(0)  # NBD_CMD_DISC, queued behind the reads
while not h.aio_is_closed() and not h.aio_is_dead():
    h.poll(1000)
done = []
for c in cookies:
    try:
        done.append(h.aio_command_completed(c))
    except nbd.Error as e:
        done.append(e.errno)
print(json.dumps(done))
""",
            d.uri,
        )
        assert len(got) == 8 and set(got) <= {True, "ESHUTDOWN"}
        assert d.accounts().requests == got.count(True)


def test_unaligned_trim_and_write_zeroes_succeed_and_unmap_only_whole_chunks(drive: VirtualDrive) -> None:
    libnbd(f"h.pwrite(bytearray({4 * CHUNK}), 0)\nprint(1)", drive.uri)
    assert drive.model.filled == 4 * CHUNK
    # 8 KiB inside the first chunk, through qemu-io's own NBD client: done, the chunk keeps its data
    r = subprocess.run(["qemu-io", "-f", "raw", "-c", "discard 4096 8192", drive.uri], capture_output=True, text=True)
    assert r.returncode == 0 and "discard 8192/8192 bytes" in r.stdout, r.stdout + r.stderr
    assert drive.model.filled == 4 * CHUNK
    # from the middle of chunk 1 to the middle of chunk 3: chunk 2 alone is covered whole
    assert libnbd(libnbd_errno(f"h.trim({2 * CHUNK}, {CHUNK + CHUNK // 2})"), drive.uri) == ""
    assert drive.model.filled == 3 * CHUNK
    assert libnbd(libnbd_errno(f"h.zero({CHUNK}, {3 * CHUNK})"), drive.uri) == ""  # write-zeroes deallocates
    assert drive.model.filled == 2 * CHUNK
    assert libnbd(libnbd_errno("h.trim(1000, 0)"), drive.uri) == "EINVAL"  # not whole sectors, as any request


def test_block_status_shows_the_fill_and_what_trim_unmapped(drive: VirtualDrive) -> None:
    drive.model.fill(1 << 30)  # what a campaign's fast fill does
    extents = nbdinfo_map(drive.uri)
    assert extents[0] == {"offset": 0, "length": 1 << 30, "type": 0, "description": "data"}
    assert extents[1]["offset"] == 1 << 30 and extents[1]["description"] == "hole,zero"
    assert sum(e["length"] for e in extents) == drive.size
    libnbd(f"h.trim({CHUNK}, {CHUNK})\nprint(1)", drive.uri)
    head = [(e["offset"], e["length"], e["description"]) for e in nbdinfo_map(drive.uri)[:3]]
    assert head == [(0, CHUNK, "data"), (CHUNK, CHUNK, "hole,zero"), (2 * CHUNK, (1 << 30) - 2 * CHUNK, "data")]


def test_an_unknown_export_name_is_refused(drive: VirtualDrive) -> None:
    other = f"nbd+unix:///other?socket={drive.socket_path}"
    r = subprocess.run(["nbdinfo", other], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "other" in r.stderr
    r = subprocess.run(["nbdinfo", "--size", drive.uri], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and int(r.stdout) == drive.size


def test_large_replies_a_client_does_not_read_hold_no_memory() -> None:
    """Eight 32 MiB reads (the advertised maximum) that the client leaves unread: the server holds them
    without their 256 MiB (the zeros are the kernel's zero page) and sends them when it reads."""
    with VirtualDrive(load_drive_profile("950pro_512"), scale=0.1) as d:
        assert d.proc is not None
        before = rss_kib(d.proc.pid)
        env = dict(os.environ)
        reader = subprocess.Popen(
            [
                "/usr/bin/python3", "-c",
                "import sys, nbd\nh = nbd.NBD()\nh.connect_uri(sys.argv[1])\n"
                "bufs = [nbd.Buffer(32 << 20) for _ in range(8)]\n"
                "for i, b in enumerate(bufs): h.aio_pread(b, i << 25)\n"
                "print('sent', flush=True)\nsys.stdin.readline()\n"
                "while h.aio_in_flight(): h.poll(-1)\n"
                "print(all(b.is_zero() for b in bufs), flush=True)\n",
                d.uri,
            ],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert reader.stdin is not None and reader.stdout is not None
        assert reader.stdout.readline().strip() == "sent"
        while d.accounts().replies < 8:  # all eight served by the drive, their replies waiting
            time.sleep(0.05)
        held = rss_kib(d.proc.pid) - before
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "True"
        assert reader.wait(60) == 0
        assert held < 32 * 1024, f"{held} KiB held for 256 MiB of unread replies"


@pytest.mark.parametrize("rest_s", [0.45, 2.0])
def test_no_burst_after_idle_beats_the_ceiling(rest_s: float) -> None:
    """128 KiB random reads at QD32 at scale 0.1 (a 250 MB/s ceiling), 0.25 s bursts after an idle
    drive: a drive with nothing in flight starts afresh, so from the burst's first request on it
    completes at most the ceiling's work plus one request. An upper bound, which a loaded machine only
    moves further from."""
    with VirtualDrive(load_drive_profile("950pro_512"), scale=0.1) as d:
        p = d.model.profile
        ceiling = min(p.rand_read_iops * 131072, p.seq_read_bps) * d.scale
        for _ in range(3):
            time.sleep(rest_s)  # the drive idles
            job = fio_json(
                "--name=b", "--ioengine=nbd", f"--uri={d.uri}", "--rw=randread", "--bs=128k", "--iodepth=32",
                "--size=16g", "--time_based=1", "--runtime=250ms",
            )["jobs"][0]["read"]  # fmt: skip
            seconds = job["runtime"] / 1000
            assert seconds > 0
            assert job["io_bytes"] <= ceiling * seconds + 131072, (job["io_bytes"], seconds)


def test_a_server_that_dies_is_noticed_with_one_line_and_can_serve_again() -> None:
    with VirtualDrive(load_drive_profile("950pro_512"), scale=0.1) as d:
        assert d.proc is not None and d.poll() is None
        os.kill(d.proc.pid, signal.SIGKILL)  # the nbdkit this test started
        d.proc.wait(30)
        d.tick(0.1, 30.0, 30.0)  # the plant's next tick
        assert d.failure is not None and "\n" not in d.failure
        assert "nbdkit" in d.failure and str(-signal.SIGKILL) in d.failure
        with pytest.raises(DriveServerError, match="exited with status"):
            d.check()
        d.model.fill(1 << 30)
        d.restart()  # what `thermrig sim --drive` does: the same URI, the drive's state kept
        assert d.poll() is None and nbdinfo_map(d.uri)[0]["length"] == 1 << 30


def test_thermrig_sim_serves_the_drive_beside_the_rig(isolated_env: dict[str, str], tmp_path: Path) -> None:
    """`thermrig sim --drive`: the port, then the drive's NBD URI, for a user's own fio job (this one takes
    the URI from the environment, as fio's examples/nbd.fio does) and nbdinfo."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "thermrig.cli", "sim", "--drive", "950pro_512", "--scale", "0.05"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**isolated_env, "COLUMNS": "200"},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().strip() for _ in range(7)]
        uri = next(line for line in lines if line.startswith("nbd+unix:///?socket="))
        assert any(line.startswith("/") for line in lines)  # the rig's port, as without a drive
        r = subprocess.run(["nbdinfo", "--size", uri], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and int(r.stdout) == load_drive_profile("950pro_512").capacity_bytes
        job = tmp_path / "mine.fio"
        job.write_text(
            "[global]\nioengine=nbd\nuri=${uri}\nrw=randrw\nnumber_ios=200\niodepth=8\n[a]\n[b]\noffset=64m\n"
        )
        out = fio_json(str(job), env={**os.environ, "uri": uri})
        assert [j["error"] for j in out["jobs"]] == [0, 0]
        assert all(j["read"]["total_ios"] + j["write"]["total_ios"] == 200 for j in out["jobs"])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0
