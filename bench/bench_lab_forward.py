"""What a sealed lab's SSH forward costs fio: the same short job on a test PC's fio server (loopback, a
file as the drive) run straight (`fio --client=HOST,PORT`, the open setup) and through the forward a
place's testbed opens (`ssh -N -L` to the test PC's sshd, with the lab's key), alternating, five times
each: write throughput and mean completion latency as fio reports them, and the wall time of a job
(connection, job, results and logs back). The forward carries fio's own protocol only; the I/O is the
test PC's. Then the same short campaign (`thermrig run --lab`, three places, one run each) on the sealed
simulated lab and `insecure` (fio's servers and the rigs' serial ports straight): fio's mean throughput
and latency over every second it logged, as recorded in the lab's InfluxDB."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import figure

from thermrig.children import wait_for
from thermrig.db.local_server import free_port
from thermrig.db.query import influxql
from thermrig.lab.client import Endpoint
from thermrig.lab.remote_fio import fio_answers, run_remote_fio
from thermrig.lab.ssh_forward import SshForward
from thermrig.lab_world.world import CAMPAIGN_RIG, PLACES, TAGS, Lab, Proc, campaign, simulated_lab, ssh_server

ROUNDS = 5
RUNTIME_S = 5
CAMPAIGN_RUNTIME_S = 10


def job(drive: Path, prefix: Path) -> str:
    return f"""[global]
ioengine=psync
filename={drive}
size=256M
time_based=1
runtime={RUNTIME_S}
log_avg_msec=1000
write_bw_log={prefix}
write_lat_log={prefix}
[seqwrite]
rw=write
bs=128k
"""


def one(folder: Path, server: Endpoint, drive: Path) -> tuple[float, float, float]:
    """MB/s written, mean completion latency in µs, wall seconds."""
    workdir = Path(tempfile.mkdtemp(dir=folder))
    start = time.monotonic()
    result = run_remote_fio(job(drive, workdir / "fio"), workdir, server, "bench")
    wall = time.monotonic() - start
    (stats,) = result.result["jobs"]
    return stats["write"]["bw_bytes"] / 1e6, stats["write"]["clat_ns"]["mean"] / 1e3, wall


def fio_in_campaign(lab: Lab, folder: Path, name: str, insecure: bool) -> tuple[float, float, int]:
    """A campaign of one run per place, fio reached through SSH or straight: fio's mean throughput (MB/s)
    and mean latency (µs) over the seconds it logged, and how many such seconds."""
    assert lab.influx is not None
    env = {**os.environ, **lab.influx.env()}
    for var in ("XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[var] = str(folder / name / var.lower())
    path = campaign(folder, name, lab.address, runs=len(PLACES), runtime_s=CAMPAIGN_RUNTIME_S,
                    ssh_key=lab.ssh_key, insecure=insecure)  # fmt: skip
    cmd = [sys.executable, "-m", "thermrig.cli", "run", str(path), "--out", str(folder / name / "runs")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    runs = len(PLACES)
    if done.returncode != 0 or f"{runs} of {runs} runs ok" not in done.stdout:
        raise SystemExit(f"campaign {name} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    q = f"SELECT mean(bw_bps), mean(lat_mean_ns), count(bw_bps) FROM fio_interval WHERE \"campaign\" = '{name}'"
    ((_, bw, lat, count),) = influxql(lab.influx.settings, q)[0].values
    return float(bw) / 1e6, float(lat) / 1e3, int(count)


def campaigns() -> None:
    """The same short campaign sealed and insecure, alternating, twice each."""
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        with simulated_lab(folder / "lab", list(PLACES), CAMPAIGN_RIG) as lab:
            for name in PLACES:
                lab.add_place(name, TAGS)
            figures: dict[str, list[tuple[float, float, int]]] = {"sealed": [], "insecure": []}
            for i in range(2):
                for how in figures:
                    figures[how].append(fio_in_campaign(lab, folder, f"{how}{i}", how == "insecure"))
    for how, runs in figures.items():
        label = f"campaign 3x{CAMPAIGN_RUNTIME_S} s seq write, {how}"
        bw = [r[0] for r in runs]
        lat = [r[1] for r in runs]
        figure(f"{label}: MB/s", " / ".join(f"{x:.1f}" for x in bw))
        figure(f"{label}: mean lat", " / ".join(f"{x:.0f}" for x in lat) + " µs")
        figure(f"{label}: fio seconds logged", " / ".join(str(r[2]) for r in runs))


def main() -> None:
    one_job()
    campaigns()


def one_job() -> None:
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-", dir="/var/tmp") as tmp:
        folder = Path(tmp)
        testpc = folder / "testpc"
        testpc.mkdir()
        fio_port, ssh_port = free_port(), free_port()
        fio = Proc.start(["fio", f"--server=ip:127.0.0.1,{fio_port}"], testpc)
        key = folder / "lab_key"
        Proc.start(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], folder).popen.wait()
        (testpc / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
        options = {"AuthorizedKeysFile": str(testpc / "authorized_keys"), "StrictModes": "no"}
        sshd = ssh_server(testpc, ssh_port, options)
        try:
            if not wait_for(lambda: fio_answers(Endpoint("127.0.0.1", fio_port), 1) is None, 30):
                raise SystemExit(f"the fio server did not answer:\n{fio.output()}")
            direct = Endpoint("127.0.0.1", fio_port)
            drive = testpc / "drive.bin"
            figures: dict[str, list[tuple[float, float, float]]] = {"straight": [], "through SSH": []}
            with SshForward(Endpoint("127.0.0.1", ssh_port), fio_port, "bench: the fio server", str(key)) as fwd:
                one(folder, direct, drive)  # the drive file laid out once, before any figure
                for _ in range(ROUNDS):
                    figures["straight"].append(one(folder, direct, drive))
                    figures["through SSH"].append(one(folder, fwd.local, drive))
        finally:
            sshd.stop()
            fio.stop()
    for how, runs in figures.items():
        bw = [r[0] for r in runs]
        lat = [r[1] for r in runs]
        wall = [r[2] for r in runs]
        figure(
            f"fio {RUNTIME_S} s seq write 128k, {how}: MB/s",
            f"{statistics.median(bw):.0f} ({min(bw):.0f}-{max(bw):.0f})",
        )
        figure(f"fio {RUNTIME_S} s seq write 128k, {how}: mean clat", f"{statistics.median(lat):.1f} µs")
        figure(f"fio {RUNTIME_S} s seq write 128k, {how}: job wall time", f"{statistics.median(wall):.2f} s")


if __name__ == "__main__":
    main()
