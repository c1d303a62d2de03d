"""The virtual drive keeping what is written (keep_data): the store's disk blocks and nbdkit's resident
memory after 10 GiB written by fio (1 MiB sequential writes, QD8, scale 1) and after a whole-drive trim;
the host's page cache holds the file's recent pages as for any file (reclaimable, not counted here).
Then nbdcopy reading a written 1 GiB image back out of the drive at scale 0.1 (4 connections, its
default), its rate against the model's sequential read rate on the wire, and the same served/modelled
cases as bench_virtual_drive for 128K sequential write and 4K random write and read at QD32 with data
kept.

    python bench/bench_drive_data.py"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from bench_virtual_drive import CASES, run_case
from common import figure

from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.virtual_drive.served import VirtualDrive

GIB = 2**30
WRITTEN = 10 * GIB


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def trim_all(uri: str, size: int) -> None:
    step = 1 << 31  # a request's length is 32 bits
    script = "import sys, nbd\nh = nbd.NBD()\nh.connect_uri(sys.argv[1])\n"
    script += f"for o in range(0, {size}, {step}): h.trim(min({step}, {size} - o), o)\n"
    subprocess.run(["/usr/bin/python3", "-c", script, uri], check=True, timeout=300)


def store_after_10_gib() -> None:
    with VirtualDrive(load_drive_profile("950pro_512"), scale=1.0, keep_data=12 * GIB) as d:
        assert d.store is not None and d.proc is not None
        t0 = time.monotonic()
        cmd = ["fio", "--name=w", "--ioengine=nbd", f"--uri={d.uri}", "--rw=write", "--bs=1m", "--iodepth=8"]
        subprocess.run([*cmd, f"--size={WRITTEN}"], check=True, capture_output=True, timeout=1800)
        wall = time.monotonic() - t0
        kept, rss = d.store.kept_bytes(), rss_mib(d.proc.pid)
        figure(
            "10 GiB written: store on disk, nbdkit resident",
            f"{kept / GIB:.2f} GiB, {rss:.0f} MiB",
            f"apparent size {d.size / 1e9:.0f} GB (the export); written at {WRITTEN / wall / 1e6:,.0f} MB/s "
            f"(modelled {d.model.profile.seq_write_bps / 1e6:,.0f})",
        )
        trim_all(d.uri, d.size)
        figure(
            "after a whole-drive trim: store on disk, nbdkit resident",
            f"{d.store.kept_bytes() / GIB:.2f} GiB, {rss_mib(d.proc.pid):.0f} MiB",
            f"map: {d.collect().filled} bytes mapped",
        )


def nbdcopy_out() -> None:
    scale = 0.1
    with tempfile.TemporaryDirectory() as tmp, VirtualDrive(load_drive_profile("950pro_512"), scale, 2 * GIB) as d:
        image = Path(tmp) / "image"
        subprocess.run(["head", "-c", str(GIB), "/dev/urandom"], stdout=image.open("wb"), check=True)
        subprocess.run(["nbdcopy", str(image), d.uri], check=True, timeout=600)
        image.unlink()
        d.idle()
        t0 = time.monotonic()
        subprocess.run(["nbdcopy", d.uri, "null:"], check=True, timeout=600)  # the data extents: the image
        wall = time.monotonic() - t0
        modelled = d.model.profile.seq_read_bps * scale
        figure(
            "nbdcopy of a written 1 GiB image out of the drive, scale 0.1",
            f"{GIB / wall / 1e6:,.0f} MB/s",
            f"modelled {modelled / 1e6:,.0f} MB/s on the wire ({GIB / wall / modelled:.2f})",
        )


def kept_cases() -> None:
    names = ("128K seq write QD32", "4K rand write QD32", "4K rand read QD32")
    with tempfile.TemporaryDirectory() as tmp:
        for case in (c for c in CASES if c.name in names):
            for scale in (1.0, 0.1):
                run_case(case, scale, Path(tmp), keep_data=16 * GIB)  # the job spans 16 GiB


def main() -> None:
    store_after_10_gib()
    nbdcopy_out()
    kept_cases()


if __name__ == "__main__":
    main()
