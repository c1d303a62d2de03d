"""Virtual drive over NBD (nbdkit and the project's plugin): what the real fio gets (served) against what
the model says the drive does at that block size and queue depth (modelled), per second, for 128K
sequential read and write, 4K random read, write and 70/30 mix at QD1 and QD32, and 32 MiB reads at
QD16; the CPU nbdkit spends serving (and the simulated rig's process: plant, model ticks), each at scale
1 and at the campaign default. Beside each case, the same fio job against nbdkit's own `null` plugin
(no model, no waiting) in the same minute: the wire's ceiling for that job on this machine now, so a
case whose modelled rate is above it cannot reach 1.00 whatever the server does. Each pass prints the
load average when it starts and ends (the machine is shared). Then the largest fio numjobs that
connects every job, and nbdkit's memory with eight 32 MiB reads a client leaves unread.

    python bench/bench_virtual_drive.py                 every case, both scales
    python bench/bench_virtual_drive.py --scale 0.2     every case at scale 0.2 only
    python bench/bench_virtual_drive.py --repeat 2      every case twice (report the repeat)
    python bench/bench_virtual_drive.py "4K rand read"  the cases whose names start so"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import figure

from thermrig.campaign.spec import DriveSpec
from thermrig.dut.pacing import Pacing
from thermrig.fio.runner import run_fio
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.virtual_drive.drive_model import DriveModel
from thermrig.virtual_drive.served import THREADS, VirtualDrive

RUNTIME_S = 6
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Case:
    name: str
    rw: str
    bs: int
    qd: int
    read_pct: int  # share of reads, for the model's mix


CASES = [
    *(
        Case(f"{label} QD{qd}", rw, bs, qd, pct)
        for label, rw, bs, pct in (
            ("128K seq read", "read", 131072, 100),
            ("128K seq write", "write", 131072, 0),
            ("4K rand read", "randread", 4096, 100),
            ("4K rand write", "randwrite", 4096, 0),
            ("4K rand 70/30", "randrw", 4096, 70),
        )
        for qd in (1, 32)
    ),
    Case("32M rand read QD16", "randread", 32 << 20, 16, 100),
]


def modelled_iops(case: Case) -> float:
    """Requests a second the model serves at this queue depth: min(qd / latency, 1 / occupancy), the
    mix weighted by its shares; a fresh drive at full speed, reads and writes at offsets 16 GiB apart.
    A sequential stream: every request continues the last (reads from the read-ahead)."""
    m = DriveModel(load_drive_profile("950pro_512"))
    r = m.serve(False, 0, case.bs)
    if case.rw == "read":
        r = m.serve(False, case.bs, case.bs)
    w = m.serve(True, 16 << 30, case.bs)
    if case.rw == "write":
        w = m.serve(True, (16 << 30) + case.bs, case.bs)
    f = case.read_pct / 100
    latency = f * r.latency + (1 - f) * w.latency
    occupancy = f * r.occupancy + (1 - f) * w.occupancy
    return min(case.qd / latency, 1 / occupancy)


def job(case: Case, uri: str, log: str) -> str:
    return "\n".join(
        [
            "[global]",
            "ioengine=nbd",
            f"uri={uri}",
            "size=16g",
            f"bs={case.bs}",
            f"iodepth={case.qd}",
            f"rw={case.rw}",
            f"rwmixread={case.read_pct}",
            f"runtime={RUNTIME_S}",
            "time_based=1",
            f"write_iops_log={log}",
            "log_avg_msec=1000",
            "[bench]",
            "",
        ]
    )


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def null_rate(case: Case, tmp: Path) -> float:
    """Requests a second nbdkit's `null` plugin serves to the same fio job (same threads, no log), now."""
    jobfile = tmp / "null.fio"
    jobfile.write_text(job(case, "${uri}", "").replace("write_iops_log=\n", "").replace("log_avg_msec=1000\n", ""))
    cmd = ["nbdkit", "-U", "-", "--threads", str(THREADS), "null", "size=16G", "--run"]
    cmd += [f"export uri; fio --output-format=json {jobfile}"]  # nbdkit sets uri, unexported
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    result = json.loads(out[out.index("{") :])["jobs"][0]
    return float(result["read"]["iops"] + result["write"]["iops"])


def run_case(case: Case, scale: float, tmp: Path, keep_data: int = 0) -> None:
    """keep_data: the drive keeps what is written, up to that size (bench_drive_data)."""
    model_iops = modelled_iops(case)
    cfg = SimConfig(pacing=Pacing.accelerated(1.0), drive="950pro_512", drive_scale=scale, drive_keep_data=keep_data)
    with (
        SimulatedRig(cfg) as sim,
        RigLink(sim.port) as link,
    ):
        link.hello()  # a host reading the rig, as in a campaign
        assert sim.drive is not None and sim.drive.proc is not None
        folder = tmp / f"{case.name.replace(' ', '_').replace('/', '-')}-{scale:g}"
        nbdkit = sim.drive.proc.pid
        cpu0, own0, wall0 = cpu_s(nbdkit), time.process_time(), time.monotonic()
        result = run_fio(job(case, sim.drive.uri, str(folder / "fio")), folder)
        wall = time.monotonic() - wall0
        cpu, own = cpu_s(nbdkit) - cpu0, time.process_time() - own0
    wire = null_rate(case, tmp)
    per_second: dict[int, float] = {}
    for p in result.iops:  # reads and writes of a mix log separately: add them per second
        per_second[p.timestamp_ms // 1000] = per_second.get(p.timestamp_ms // 1000, 0.0) + p.value
    full = [v for _, v in sorted(per_second.items())][1:-1]  # the first and last seconds are partial
    expected = model_iops * scale
    ratios = [v / expected for v in full] or [0.0]

    def rate(iops: float) -> str:
        return f"{iops * case.bs / 1e6:,.0f} MB/s" if case.bs > 4096 else f"{iops:,.0f} IOPS"

    kept = ", data kept" if keep_data else ""
    figure(
        f"{case.name} at scale {scale:g}{kept}: served / modelled, median (worst s)",
        f"{statistics.median(ratios):.2f} ({min(ratios):.2f})",
        f"mean {statistics.fmean(ratios):.2f}; modelled {rate(expected)} on the wire, null plugin {rate(wire)} "
        f"({wire / expected:.1f}x); nbdkit {cpu / wall * 100:.0f} %, rig process {own / wall * 100:.0f} % of a core",
    )


def largest_numjobs() -> None:
    """fio jobs, each its own NBD connection, that all connect and finish their I/O."""
    best = 0
    with VirtualDrive(load_drive_profile("950pro_512"), scale=0.1) as d:
        for n in (64, 128, 256, 512):
            cmd = ["fio", "--name=j", "--ioengine=nbd", f"--uri={d.uri}", "--rw=randread", "--bs=4k", "--size=64m"]
            cmd += [f"--numjobs={n}", "--iodepth=1", "--number_ios=20", "--group_reporting"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if r.returncode != 0 or "err= 0" not in r.stdout:
                break
            best = n
    figure("fio numjobs that connects every job (tried 64, 128, 256, 512)", f"{best}", "each job one connection")


def unread_replies_memory() -> None:
    """nbdkit's resident memory while eight 32 MiB reads wait for a client that does not read them."""
    script = (
        "import sys, nbd\nh = nbd.NBD()\nh.connect_uri(sys.argv[1])\n"
        "bufs = [nbd.Buffer(32 << 20) for _ in range(8)]\n"
        "for i, b in enumerate(bufs): h.aio_pread(b, i << 25)\n"
        "print('sent', flush=True)\nsys.stdin.readline()\n"
        "while h.aio_in_flight(): h.poll(-1)\n"
    )
    with VirtualDrive(load_drive_profile("950pro_512"), scale=0.1) as d:
        assert d.proc is not None
        rss = Path(f"/proc/{d.proc.pid}/status")

        def kib(key: str) -> int:
            return next(int(line.split()[1]) for line in rss.read_text().splitlines() if line.startswith(key))

        before = kib("VmRSS:")
        reader = subprocess.Popen(
            ["/usr/bin/python3", "-c", script, d.uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert reader.stdin is not None and reader.stdout is not None
        reader.stdout.readline()
        while d.accounts().replies < 8:
            time.sleep(0.05)
        held, peak = kib("VmRSS:") - before, kib("VmHWM:") - before
        reader.stdin.write("\n")
        reader.stdin.flush()
        reader.wait(60)
    figure(
        "nbdkit memory, 8 unread 32 MiB replies: resident (peak)",
        f"+{held / 1024:.1f} MiB (+{peak / 1024:.0f})",
        "256 MiB of zeros waiting; the peak is nbdkit zeroing each buffer it allocates",
    )


def main() -> None:
    args = sys.argv[1:]
    scales = [1.0, DriveSpec.scale]  # the drive's own rates, and the campaign default
    repeat = 1
    if "--scale" in args:
        i = args.index("--scale")
        scales = [float(args[i + 1])]
        del args[i : i + 2]
    if "--repeat" in args:
        i = args.index("--repeat")
        repeat = int(args[i + 1])
        del args[i : i + 2]
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(repeat):
            for scale in dict.fromkeys(scales):
                print(f"pass {n + 1} of {repeat}, scale {scale:g}: {load()}", flush=True)
                for case in CASES:
                    if not args or any(case.name.startswith(w) for w in args):
                        run_case(case, scale, Path(tmp))
                print(f"pass {n + 1} of {repeat}, scale {scale:g} done: {load()}", flush=True)
    if not args:
        largest_numjobs()
        unread_replies_memory()


if __name__ == "__main__":
    main()
