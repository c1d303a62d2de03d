"""InfluxDB path: sustained points/s into a local influxd with batching, spool drain after a
10-minute outage, and the recording agent's CPU at 10 Hz telemetry (it shares the machine with fio)."""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import advance_with_host, figure

from thermrig.db.local_server import LocalInflux
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags, telemetry_lines
from thermrig.db.spool import Spool
from thermrig.db.writer import SpoolWriter
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

FRAMES = 60_000  # x3 points: 180,000 points


def sustained(server: LocalInflux, folder: Path) -> None:
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        sim.advance(0.2)
        tel = link.next_telemetry()
    tags = RunTags(rig="bench", run="sustained")
    spool = Spool.for_run("sustained", folder)
    base = time.time_ns()
    for chunk in range(0, FRAMES, 5000):
        spool.append(
            [line for i in range(chunk, chunk + 5000) for line in telemetry_lines(tel, base + i * 10**8, tags)]
        )
    writer = SpoolWriter(spool, server.settings())
    start = time.monotonic()
    writer.close(flush_timeout=600)
    wall = time.monotonic() - start
    figure(f"sustained write, batches of 5000 ({3 * FRAMES} points)", f"{3 * FRAMES / wall:,.0f} points/s")


def outage_drain(server: LocalInflux, folder: Path) -> None:
    spool = Spool.for_run("outage", folder)
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        recorder = Recorder(link, spool, RunTags(rig="bench", run="outage"))  # InfluxDB away
        recorder.start()
        advance_with_host(sim, link, 600)
        recorder.stop()
    points = recorder.stats.points + recorder.stats.events
    writer = SpoolWriter(spool, server.settings())
    start = time.monotonic()
    writer.close(flush_timeout=600)
    wall = time.monotonic() - start
    figure(
        f"drain after a 10-minute outage ({points} points spooled)", f"{wall:.2f} s", f"{points / wall:,.0f} points/s"
    )


def agent_cpu(server: LocalInflux, folder: Path, seconds: float = 30.0) -> None:
    # The simulated rig runs in its own process: what is measured is the agent alone.
    sim = subprocess.Popen(
        [sys.executable, "-m", "thermrig.cli", "sim", "--link", str(folder / "tty")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        while not (folder / "tty").exists():
            time.sleep(0.05)
        spool = Spool.for_run("cpu", folder)
        with RigLink(str(folder / "tty")) as link:
            link.hello()
            link.start_keepalive()
            writer = SpoolWriter(spool, server.settings())
            recorder = Recorder(link, spool, RunTags(rig="bench", run="cpu"))
            writer.start()
            recorder.start()
            time.sleep(2.0)
            usage0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
            frames0 = recorder.stats.frames
            time.sleep(seconds)
            usage1, wall1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
            frames = recorder.stats.frames - frames0
            recorder.stop()
            writer.close()
    finally:
        sim.terminate()
        sim.wait()
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    figure(
        f"agent CPU recording {frames / seconds:.1f} Hz telemetry for {seconds:.0f} s",
        f"{100 * cpu / (wall1 - wall0):.2f} % of one core",
        "target < 2 %",
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="thermrig-bench-") as tmp:
        server = LocalInflux(Path(tmp) / "influxdb")
        server.up()
        try:
            sustained(server, Path(tmp))
            outage_drain(server, Path(tmp))
            agent_cpu(server, Path(tmp))
        finally:
            server.down()


if __name__ == "__main__":
    main()
