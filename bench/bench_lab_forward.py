"""What a sealed lab's SSH forward costs fio: the same short job on a test PC's fio server (loopback, a
file as the drive) run straight (`fio --client=HOST,PORT`, the open setup) and through the forward a
place's testbed opens (`ssh -N -L` to the test PC's sshd, with the lab's key), alternating, five times
each: write throughput and mean completion latency as fio reports them, and the wall time of a job
(connection, job, results and logs back). The forward carries fio's own protocol only; the I/O is the
test PC's."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from common import figure

from thermrig.children import wait_for
from thermrig.db.local_server import free_port
from thermrig.lab.client import Endpoint
from thermrig.lab.remote_fio import fio_answers, run_remote_fio
from thermrig.lab.ssh_forward import SshForward
from thermrig.lab_world.world import Proc, ssh_server

ROUNDS = 5
RUNTIME_S = 5


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


def main() -> None:
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
