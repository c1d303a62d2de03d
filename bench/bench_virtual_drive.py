"""Virtual drive over NBD: what the real fio gets (served) against what the model says the drive does
at that block size and queue depth (modelled), per second, for 128K sequential read and write and 4K
random read, write and 70/30 mix at QD1 and QD32; and the CPU the simulated rig's process (plant, NBD
server) spends serving. Sequential runs at the drive's own rates (scale 1) and at scale 0.1; a random
case at the largest scale that asks the wire for at most 20,000 IOPS at QD32 and 2,000 at QD1 (a
round trip through Python and fio takes hundreds of microseconds: the scale a campaign would set)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import figure

from thermrig.fio.runner import run_fio
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.virtual_drive.drive_model import DriveModel

RUNTIME_S = 6
WIRE_IOPS = {1: 2_000, 32: 20_000}  # random I/O: the rate the wire is asked for at most, by queue depth


@dataclass(frozen=True)
class Case:
    name: str
    rw: str
    bs: int
    qd: int
    read_pct: int  # share of reads, for the model's mix
    seq_scale: float = 1.0  # sequential cases: the wire scale


CASES = [
    Case(f"{label} QD{qd}", rw, bs, qd, pct, seq_scale)
    for label, rw, bs, pct in (
        ("128K seq read", "read", 131072, 100),
        ("128K seq write", "write", 131072, 0),
        ("4K rand read", "randread", 4096, 100),
        ("4K rand write", "randwrite", 4096, 0),
        ("4K rand 70/30", "randrw", 4096, 70),
    )
    for qd in (1, 32)
    for seq_scale in ((1.0, 0.1) if bs > 4096 else (1.0,))
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


def run_case(case: Case, tmp: Path) -> None:
    model_iops = modelled_iops(case)
    scale = case.seq_scale if case.rw in ("read", "write") else min(1.0, WIRE_IOPS[case.qd] / model_iops)
    with SimulatedRig(SimConfig(speed=1.0, drive="950pro_512", drive_scale=scale)) as sim, RigLink(sim.port) as link:
        link.hello()  # a host reading the rig, as in a campaign
        assert sim.drive is not None
        folder = tmp / case.name.replace(" ", "_").replace("/", "-")
        cpu0, wall0 = time.process_time(), time.monotonic()
        result = run_fio(job(case, sim.drive.uri, str(folder / "fio")), folder)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    per_second: dict[int, float] = {}
    for p in result.iops:  # reads and writes of a mix log separately: add them per second
        per_second[p.timestamp_ms // 1000] = per_second.get(p.timestamp_ms // 1000, 0.0) + p.value
    full = [v for _, v in sorted(per_second.items())][1:-1]  # the first and last seconds are partial
    expected = model_iops * scale
    ratios = [v / expected for v in full] or [0.0]
    unit = f"{expected * case.bs / 1e6:,.0f} MB/s" if case.bs > 4096 else f"{expected:,.0f} IOPS"
    figure(
        f"{case.name}: served / modelled, median (worst s)",
        f"{statistics.median(ratios):.2f} ({min(ratios):.2f})",
        f"modelled {unit} on the wire at scale {scale:.3g}; server CPU {cpu / wall * 100:.0f} % of a core",
    )


def main() -> None:
    """Every case, or those whose names start with the arguments (e.g. "128K seq read")."""
    wanted = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if not wanted or any(case.name.startswith(w) for w in wanted):
                run_case(case, Path(tmp))


if __name__ == "__main__":
    main()
