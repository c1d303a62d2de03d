"""The virtual drive keeps what is written (keep_data): reads return it, TRIM and write-zeroes punch
holes in the store and the map, the store's cap refuses writes with ENOSPC and one line, the data outlives
the server's death; under clients nobody here wrote: libnbd, nbdinfo, nbdcopy, fio's verify jobs."""

from __future__ import annotations

import filecmp
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign_helpers import VIRTUAL_DRIVE, CampaignFile
from nbd_clients import fio_json, libnbd, libnbd_errno, nbdinfo_map

from thermrig.campaign.spec import CampaignError, load_campaign
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.virtual_drive.lba_map import CHUNK
from thermrig.virtual_drive.served import VirtualDrive

MIB = 2**20
JOBS = Path(__file__).parent / "fio_jobs" / "verify"  # not lab jobs: test_lab_job takes fio_jobs/*.fio


@pytest.fixture
def drive() -> Iterator[VirtualDrive]:
    with VirtualDrive(load_drive_profile("950pro_512"), scale=1.0, keep_data=256 * MIB) as d:
        yield d


def test_reads_return_what_was_written_and_trim_and_write_zeroes_give_it_back(drive: VirtualDrive) -> None:
    assert drive.store is not None
    last = drive.size - 4096
    got = libnbd(
        f"""
a, b = bytes(range(256)) * 16 * 256, b"\\xa5" * 4096  # 1 MiB, one sector-aligned 4 KiB
h.pwrite(a, 0)
h.pwrite(b, {last}, nbd.CMD_FLAG_FUA)
ok = [h.pread(len(a), 0) == a, h.pread(4096, {last}) == b, h.pread(4096, 8 * 1048576) == bytes(4096)]
h.trim(4096, 8192)  # 4 KiB at 8 KiB, inside the first chunk: it stays mapped, the range reads zeros
h.zero(65536, 2 * 65536)  # 64 KiB at 128 KiB, a whole chunk: unmapped
h.flush()
r = h.pread(len(a), 0)
ok += [r[:8192] == a[:8192], r[8192:12288] == bytes(4096), r[12288:131072] == a[12288:131072],
       r[131072:196608] == bytes(65536), r[196608:] == a[196608:]]
print(json.dumps(ok))
""",
        drive.uri,
    )
    assert got == [True] * 8
    kept = drive.store.kept_bytes()
    assert MIB - 65536 - 4096 <= kept <= MIB + 65536  # what was written and not trimmed, not 512 GB
    extents = [(e["offset"], e["length"], e["type"]) for e in nbdinfo_map(drive.uri)]
    assert extents[:3] == [(0, 2 * CHUNK, 0), (2 * CHUNK, CHUNK, 3), (3 * CHUNK, MIB - 3 * CHUNK, 0)]
    assert extents[3] == (MIB, last - last % CHUNK - MIB, 3) and extents[-1][2] == 0  # the last chunk
    step = 1 << 31  # a whole-drive trim, in requests of 2 GiB (a request's length is 32 bits)
    libnbd(f"for o in range(0, {drive.size}, {step}): h.trim(min({step}, {drive.size} - o), o)\nprint(1)", drive.uri)
    assert drive.store.kept_bytes() == 0 and drive.collect().filled == 0
    assert libnbd(f"print(json.dumps(h.pread(4096, {last}) == bytes(4096)))", drive.uri)


def test_past_its_cap_the_store_refuses_new_writes_with_enospc_and_says_so() -> None:
    with VirtualDrive(load_drive_profile("950pro_512"), scale=1.0, keep_data=MIB) as d:
        assert d.store is not None and d.refused() is None
        script = f"""
def errno(f):
    try:
        f()
        return ""
    except nbd.Error as e:
        return e.errno or ""
h.pwrite(b"\\x01" * {MIB}, 0)
r = [errno(lambda: h.pwrite(b"x" * 4096, {MIB}))]  # new space past the cap
r.append(errno(lambda: h.pwrite(b"y" * 4096, 4096)))  # an overwrite of data held
r.append(h.pread(8192, 0) == b"\\x01" * 4096 + b"y" * 4096)
h.trim({MIB // 2}, {MIB // 2})
r.append(errno(lambda: h.pwrite(b"x" * 4096, {MIB})))  # space the trim gave back
print(json.dumps(r))
"""
        assert libnbd(script, d.uri) == ["ENOSPC", "", True, ""]
        log = (d.store.path.parent / "nbdkit.log").read_text()
        assert "data store is full" in log and "ENOSPC" in log
        assert d.accounts().refused_writes == 1
        line = d.refused()
        assert line is not None and "\n" not in line and "1 writes refused with ENOSPC" in line
        assert d.store.kept_bytes() <= MIB


def test_what_was_written_outlives_the_servers_death(drive: VirtualDrive) -> None:
    libnbd("h.pwrite(b'\\x5a' * 65536, 1 << 30)\nprint(1)", drive.uri)
    assert drive.proc is not None
    os.kill(drive.proc.pid, signal.SIGKILL)  # the nbdkit this test started
    drive.proc.wait(30)
    drive.restart()
    assert libnbd("print(json.dumps(h.pread(65536, 1 << 30) == b'\\x5a' * 65536))", drive.uri)


def test_a_fill_purges_the_data_kept(drive: VirtualDrive) -> None:
    assert drive.store is not None
    libnbd("h.pwrite(b'\\x5a' * 65536, 0)\nprint(1)", drive.uri)
    drive.model.fill(1 << 30)  # purge, then the fill's state at once
    assert drive.store.kept_bytes() == 0
    assert libnbd("print(json.dumps(h.pread(65536, 0) == bytes(65536)))", drive.uri)


def verify_job(name: str, uri: str, folder: Path) -> Path:
    """One of fio_jobs' verify files behind the drive's target lines, as thermrig composes a lab's job."""
    job = folder / name
    job.write_text(f"[global]\nioengine=nbd\nuri={uri}\n\n" + (JOBS / name).read_text())
    return job


def test_fio_verify_jobs_pass(drive: VirtualDrive, tmp_path: Path) -> None:
    """In the form of fio's examples/basic-verify.fio (random 4 KiB writes at QD16, then read back with
    crc32c), and four such jobs verifying while they write (verify_backlog), each in its own region."""
    out = fio_json(str(verify_job("basic-verify.fio", drive.uri, tmp_path)))
    (job,) = out["jobs"]
    assert job["error"] == 0 and job["write"]["total_ios"] == 8192 and job["read"]["total_ios"] == 8192
    out = fio_json(str(verify_job("verify-backlog.fio", drive.uri, tmp_path)))
    assert [j["error"] for j in out["jobs"]] == [0] * 4
    assert all(j["read"]["total_ios"] == j["write"]["total_ios"] == 4096 for j in out["jobs"])


def test_without_keep_data_a_verify_job_fails(tmp_path: Path) -> None:
    """What the drive did before it kept data, and still does with keep_data 0: reads return zeros."""
    with VirtualDrive(load_drive_profile("950pro_512"), scale=1.0) as d:
        r = subprocess.run(
            ["fio", str(verify_job("basic-verify.fio", d.uri, tmp_path))], capture_output=True, text=True
        )
    assert r.returncode != 0 and "verify: bad magic header" in r.stdout + r.stderr


def test_nbdcopy_of_a_written_image_reads_back_byte_for_byte(drive: VirtualDrive, tmp_path: Path) -> None:
    image, back = tmp_path / "image", tmp_path / "back"
    with open(image, "wb") as f:  # data, a hole, data: what a disk image holds
        f.write(os.urandom(8 * MIB))
        f.seek(16 * MIB)
        f.write(os.urandom(8 * MIB))
    r = subprocess.run(["nbdcopy", str(image), drive.uri], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    window = ["nbdkit", "-U", "-", "--filter=truncate", "nbd", f"uri={drive.uri}", "truncate=24M"]
    r = subprocess.run([*window, "--run", f'nbdcopy "$uri" {back}'], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert filecmp.cmp(image, back, shallow=False)


@pytest.mark.parametrize(
    ("drive", "message"),
    [
        ('keep_data = "lots"', r"\[drive\] keep_data.*'lots'.*a size such as \"8g\""),
        ('filesystem = "ext4"', r"\[drive\] filesystem.*needs the data kept"),
        ('keep_data = "1g"\nfilesystem = "xfs"', r"\[drive\] filesystem.*'xfs'.*\"ext4\""),
    ],
)
def test_a_campaign_says_what_is_wrong_with_keep_data_and_filesystem(tmp_path: Path, drive: str, message: str) -> None:
    plain = CampaignFile("kept", dict(VIRTUAL_DRIVE)).text()
    path = tmp_path / "c.toml"
    path.write_text(plain.replace("[drive]\n", f"[drive]\n{drive}\n"))
    with pytest.raises(CampaignError, match=message) as info:
        load_campaign(path)
    assert "\n" not in str(info.value)
    path.write_text(plain.replace("[drive]\n", '[drive]\nkeep_data = "2g"\nfilesystem = "ext4"\n'))
    spec = load_campaign(path).drive
    assert (spec.keep_data, spec.filesystem) == (2 << 30, "ext4")


def test_thermrig_sim_keeps_data_and_says_when_its_store_is_full(isolated_env: dict[str, str]) -> None:
    """`thermrig sim --drive --keep-data 1m`: a write past the cap fails with ENOSPC and the command
    prints one line saying why (once), while it serves on."""
    cmd = [sys.executable, "-m", "thermrig.cli", "sim", "--drive", "950pro_512", "--keep-data", "1m"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**isolated_env, "COLUMNS": "400"}
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().strip() for _ in range(7)]
        assert any("keeps up to 1m written" in line for line in lines), lines
        uri = next(line for line in lines if line.startswith("nbd+unix:///?socket="))
        script = "h.pwrite(b'k' * 1048576, 0)\n" + libnbd_errno("h.pwrite(b'x' * 4096, 1 << 30)")
        assert libnbd(script, uri) == "ENOSPC"
        assert libnbd("print(json.dumps(h.pread(4096, 0) == b'k' * 4096))", uri)
        note = proc.stdout.readline().strip()  # the serving loop's next look at the drive
        assert "data store is full" in note and "1 writes refused with ENOSPC" in note, note
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0
