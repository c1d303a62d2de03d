"""Telemetry timestamps through a campaign's speed changes on the simulated rig (20x between workloads,
1x while fio writes the virtual drive), against the plant's own clock, per phase."""

from __future__ import annotations

import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from common import figure

from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags
from thermrig.db.spool import Spool
from thermrig.dut.pacing import Pacing
from thermrig.fio.runner import run_fio
from thermrig.link.rig_link import RigLink
from thermrig.sim.plant import Plant
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.sim.wires import TICK_S

SPEED = 20.0  # a campaign's [rig] speed
PHASES = (("equilibrium", SPEED, 12.0), ("baseline", SPEED, 3.0), ("workload", 1.0, 30.0), ("cool-down", SPEED, 8.0))
RUNS = 2
LINE = re.compile(r"^rig_telemetry,.*uptime_ms=(\d+)i.* (\d+)$")


@dataclass
class Truth:
    """The host time at which the plant served each tick (the moment the firmware's uptime read its time),
    and when each phase began, in host time."""

    served: dict[int, float] = field(default_factory=dict)  # uptime ms -> host UTC
    phases: list[tuple[float, str]] = field(default_factory=list)

    def hook(self, sim: SimulatedRig) -> None:
        def tick(plant: Plant) -> None:  # runs just before the sample goes out
            t = plant.t + (TICK_S if sim.server.ticks > 0 else 0.0)
            self.served[round(t * 1000)] = time.time()

        sim.server.hooks.append(tick)

    def phase_of(self, utc: float) -> str:
        name = self.phases[0][1]
        for start, phase in self.phases:
            if utc >= start:
                name = phase
        return name


def fio_job(uri: str, runtime_s: float, log: str) -> str:
    return "\n".join(
        [
            "[global]",
            "ioengine=nbd",
            f"uri={uri}",
            "size=4g",
            "bs=4096",
            "iodepth=32",
            "rw=randwrite",
            f"runtime={runtime_s:.0f}",
            "time_based=1",
            f"write_bw_log={log}",
            "log_avg_msec=1000",
            "[bench]",
            "",
        ]
    )


def run_campaign(folder: Path, truth: Truth) -> tuple[list[tuple[int, int]], bool]:
    """RUNS runs of the phases above, recorded as a campaign records them; each run's (uptime ms, stamp
    ns) in spool order, and whether the host was told the clock's pace (this checkout can)."""
    config = SimConfig(pacing=Pacing.accelerated(SPEED), drive="950pro_512", drive_scale=0.05, seed=5)
    stamps: list[list[tuple[int, int]]] = []
    with SimulatedRig(config) as sim, RigLink(sim.port) as link:
        link.hello()
        link.start_keepalive(speed=SPEED)  # as `thermrig run` does
        told = hasattr(sim, "watch_clock")
        if told:
            sim.watch_clock(link.follow_pace)
        truth.hook(sim)
        assert sim.drive is not None
        for run in range(RUNS):
            spool = Spool.for_run(f"run{run}", folder)
            recorder = Recorder(link, spool, RunTags(rig="bench", run=f"run{run}"))
            recorder.start()
            for name, speed, seconds in PHASES:
                if sim.server.speed != speed:
                    sim.set_pacing(Pacing.accelerated(speed))
                truth.phases.append((time.time(), name))
                if name == "workload":
                    run_fio(fio_job(sim.drive.uri, seconds, str(folder / f"fio{run}")), folder / f"fio{run}")
                    sim.drive.idle()
                else:
                    time.sleep(seconds)
            recorder.stop()
            lines, _ = spool.read_batch(0, 10_000_000)
            stamps.append([(int(m[1]), int(m[2])) for m in map(LINE.match, lines) if m])
    return [s for run in stamps for s in run], told


def main() -> None:
    truth = Truth()
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-") as tmp:
        stamps, told = run_campaign(Path(tmp), truth)
    where = "told the clock's pace (SimulatedRig.watch_clock)" if told else "not told the clock's pace"
    figure(f"{RUNS} runs at {SPEED:.0f}x, workload at 1x under fio; host {where}", f"{len(stamps)} frames")
    errors: dict[str, list[float]] = {name: [] for name, _, _ in PHASES}
    first_s: list[float] = []
    backwards = 0
    worst_back = 0.0
    workload_starts = [t for t, name in truth.phases if name == "workload"]
    for i, (up_ms, ns) in enumerate(stamps):
        if i and up_ms > stamps[i - 1][0] and ns < stamps[i - 1][1]:
            backwards += 1
            worst_back = max(worst_back, (stamps[i - 1][1] - ns) / 1e6)
        served = truth.served.get(up_ms)
        if served is None:
            continue
        err = abs(ns / 1e9 - served) * 1e3
        phase = truth.phase_of(served)
        errors[phase].append(err)
        if phase == "workload" and any(0 <= served - t < 1.0 for t in workload_starts):
            first_s.append(err)
    for name, errs in errors.items():
        e = np.array(errs or [float("nan")])
        target = "target p99 < 5 ms" if name == "workload" else ""
        figure(
            f"  {name}: stamp error p50 / p99 / max ({len(errs)} frames)",
            f"{np.percentile(e, 50):.2f} / {np.percentile(e, 99):.2f} / {e.max():.1f} ms",
            target,
        )
    f = np.array(first_s or [float("nan")])
    figure("  workload's first second: error max", f"{f.max():.2f} ms", f"{len(first_s)} frames")
    figure("  telemetry time running backwards", f"{backwards} times, worst {worst_back:.1f} ms", "target 0")


if __name__ == "__main__":
    sys.exit(main())
