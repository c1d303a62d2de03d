"""Campaign figures: fio's throughput alone versus with the agent recording the rig beside it (same
job, same file), and how well fio's per-second points line up with the rig's telemetry in time."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import figure

from thermrig.db.local_server import LocalInflux
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter
from thermrig.drive.under_test import LocalDrive
from thermrig.fio.runner import run_fio
from thermrig.fio.workloads import Workload, job_file
from thermrig.link.rig_link import RigLink

ROUNDS = 5
RUNTIME_S = 10


def fio_bw(folder: Path, name: str) -> tuple[float, list[int]]:
    job = job_file(
        Workload(name, "rand_write", runtime_s=RUNTIME_S, iodepth=8).resolved(),
        LocalDrive(str(folder / "drive.dat"), "512m"),
        str(folder / name / "fio"),
    )
    result = run_fio(job, folder / name)
    return result.result["jobs"][0]["write"]["bw_bytes"], [p.timestamp_ms for p in result.bw]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        server = LocalInflux(folder / "influxdb")
        server.up()
        sim = subprocess.Popen(
            [sys.executable, "-m", "thermrig.cli", "sim", "--link", str(folder / "tty")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        alone, recorded, stamps = [], [], []
        try:
            while not (folder / "tty").exists():
                time.sleep(0.05)
            fio_bw(folder, "warmup")
            for i in range(ROUNDS):
                bw, ts = fio_bw(folder, f"alone{i}")
                alone.append(bw)
                stamps.append(ts)
                with RigLink(str(folder / "tty")) as link:
                    link.hello()
                    link.start_keepalive()
                    spool = Spool.for_run(f"rec{i}", folder)
                    writer = SpoolWriter(spool, server.settings())
                    recorder = Recorder(link, spool, RunTags(rig="bench", run=f"rec{i}"))
                    writer.start()
                    recorder.start()
                    bw, ts = fio_bw(folder, f"recorded{i}")
                    recorded.append(bw)
                    stamps.append(ts)
                    recorder.stop()
                    writer.close()
        finally:
            sim.terminate()
            sim.wait()
            server.down()
    a, r = statistics.median(alone), statistics.median(recorded)
    figure(
        f"fio 4k random write QD8 on a file, {RUNTIME_S} s, alone (median of {ROUNDS})",
        f"{a / 1e6:,.1f} MB/s",
        f"runs: {', '.join(f'{x / 1e6:.0f}' for x in alone)}",
    )
    figure(
        "the same with the agent recording the rig into InfluxDB",
        f"{r / 1e6:,.1f} MB/s",
        f"runs: {', '.join(f'{x / 1e6:.0f}' for x in recorded)}",
    )
    spread = (max(alone) - min(alone)) / a
    figure(
        "cost of the agent (median against median)",
        f"{100 * (a - r) / a:+.2f} %",
        f"run-to-run spread of fio alone: {100 * spread:.0f} %; target < 1 %",
    )
    # The last interval of a job is a partial window; the others show how exactly fio stamps its seconds.
    spacing = np.abs(np.concatenate([np.diff(ts[:-1]) for ts in stamps if len(ts) > 2]) - 1000)
    figure(
        "fio per-second stamps: deviation from 1000 ms (full windows)",
        f"p50 {np.percentile(spacing, 50):.0f} ms, max {spacing.max():.0f} ms",
        "CLOCK_REALTIME = host UTC",
    )


if __name__ == "__main__":
    main()
