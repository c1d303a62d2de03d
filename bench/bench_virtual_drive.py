"""Virtual drive: CPU it costs while serving fio (128 KiB sequential write through the net engine, 1x real
time, default scale 0.1), and how closely the wire throughput follows the drive's pace."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from common import figure

from thermrig.analysis.throttle import per_second
from thermrig.fio.runner import run_fio
from thermrig.fio.workloads import Target, Workload, job_file
from thermrig.link.rig_link import RigLink
from thermrig.plant.drive_model import Pattern
from thermrig.plant.simulated_rig import SimConfig, SimulatedRig

RUNTIME_S = 20
SCALE = 0.1


def thread_cpu() -> float:
    """CPU seconds of this process's threads (the plant with the drive's tick, the drive's sockets)."""
    return time.process_time()


def main() -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        SimulatedRig(SimConfig(speed=1.0, drive="950pro_512", drive_scale=SCALE)) as sim,
    ):
        assert sim.drive is not None
        link = RigLink(sim.port)  # a host reading the rig, as in a campaign
        link.hello()
        sim.drive.announce(Pattern(write=True, random=False, bs=128 * 1024))
        w = Workload("bench", "seq_write", runtime_s=RUNTIME_S)
        job = job_file(w, Target("virtual", net_port=sim.drive.port), str(Path(tmp) / "fio"))
        cpu0, wall0 = thread_cpu(), time.monotonic()
        result = run_fio(job, Path(tmp))
        cpu, wall = thread_cpu() - cpu0, time.monotonic() - wall0
        link.close()
        sim.drive.close()  # joins the drive's socket threads, which add their CPU time as they end
        series = per_second([p.timestamp_ms for p in result.bw], [p.value * 1024.0 for p in result.bw])
        job_cpu = result.result["jobs"][0]
        fio_cpu = (job_cpu["usr_cpu"] + job_cpu["sys_cpu"]) / 100.0
        expected = sim.drive.model.profile.seq_write_bps * SCALE
        figure(
            "wire throughput, median per second",
            f"{statistics.median(series[1:]) / 1e6:.1f} MB/s",
            f"drive pace {expected / 1e6:.1f} MB/s",
        )
        full = series[1:-1]  # the first and last seconds are partial
        close = sum(abs(v - expected) <= 0.05 * expected for v in full)
        figure("full seconds within 5 % of the pace", f"{close} of {len(full)}", f"min {min(full) / 1e6:.0f} MB/s")
        figure("virtual drive socket threads, share of one core", f"{sim.drive.cpu_s / wall * 100:.1f} %")
        figure("whole host process (plant, drive, rig link, runner), share of one core", f"{cpu / wall * 100:.1f} %")
        figure("fio itself (usr + sys), share of one core", f"{fio_cpu * 100:.1f} %")


if __name__ == "__main__":
    main()
