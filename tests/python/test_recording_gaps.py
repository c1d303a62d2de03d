"""A recording that loses the rig says so: a recorder restarted on a run's spool (after a kill), a rig
that reset and a link that was lost each leave a `gap` event in the recording's own timeline, from the
last frame recorded before it to the first after, with both frames' uptimes (rig time). And a run whose
workload phase holds a gap is flagged by `thermrig throttle` and the report."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from influx_servers import ON_BOTH
from waiting import wait_for

from thermrig.analysis.fio_log import LogPoint
from thermrig.analysis.summary_store import write_lines
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql
from thermrig.db.recorder import Recorder
from thermrig.db.schema import RunTags, event_line, fio_interval_lines, gap_line
from thermrig.db.spool import Spool
from thermrig.link.rig_link import RigLink
from thermrig.sim.fault_injection import FaultKind
from thermrig.sim.simulated_rig import SimulatedRig

TAGS = RunTags(rig="r", run="gappy", campaign="gaps")


def frames(spool: Spool) -> list[tuple[int, int]]:
    """(uptime_ms, time ns) of every telemetry frame in the spool, in order."""
    out = []
    for line in spool.path.read_text().splitlines():
        if line.startswith("rig_telemetry,"):
            uptime = re.search(r"uptime_ms=(\d+)i", line)
            assert uptime
            out.append((int(uptime.group(1)), int(line.rsplit(" ", 1)[1])))
    return out


def gaps(spool: Spool) -> list[dict[str, str]]:
    found = []
    for line in spool.path.read_text().splitlines():
        if line.startswith("run_events,") and ",kind=gap" in line:
            fields = dict(re.findall(r'(\w+)=("[^"]*"|[^,\s]+)', line.split(" ", 1)[1]))
            fields["time"] = line.rsplit(" ", 1)[1]
            found.append(fields)
    return found


def record(link: RigLink, sim: SimulatedRig, spool: Spool, seconds: float) -> Recorder:
    recorder = Recorder(link, spool, TAGS)
    recorder.start()
    start = recorder.stats.frames
    for _ in range(int(seconds)):
        sim.advance(1.0)
        link.ping()
    assert wait_for(lambda: recorder.stats.frames >= start + 10 * int(seconds) - 1)
    return recorder


def test_a_restarted_recorder_marks_the_hole_it_left(link: RigLink, sim: SimulatedRig, tmp_path: Path) -> None:
    spool = Spool.for_run(TAGS.run, tmp_path)
    first = record(link, sim, spool, 2)
    first.stop("killed")
    recorded = frames(spool)
    before = recorded[-1]
    sim.advance(3.0)  # nobody records: the recorder is dead
    assert wait_for(lambda: link.latest is not None and link.latest.uptime_ms >= before[0] + 3000)
    second = record(link, sim, spool, 2)
    second.stop("stopped")
    after = frames(spool)[len(recorded)]  # the first frame the restarted recorder wrote
    [gap] = gaps(spool)
    assert gap["detail"].startswith('"recorder restarted: no telemetry recorded for')
    assert int(gap["gap_start_ns"].removesuffix("i")) == before[1] and int(gap["time"]) == after[1]
    assert int(gap["uptime_start_ms"].removesuffix("i")) == before[0]
    assert int(gap["uptime_end_ms"].removesuffix("i")) == after[0] and after[0] - before[0] >= 3000
    assert second.stats.gaps == 1


def test_a_rig_reset_and_a_lost_link_are_marked(link: RigLink, sim: SimulatedRig, tmp_path: Path) -> None:
    spool = Spool.for_run(TAGS.run, tmp_path)
    recorder = record(link, sim, spool, 2)
    sim.faults.inject(FaultKind.MCU_RESET)
    sim.advance(0.1)
    assert wait_for(lambda: link.stats.mcu_resets == 1)
    for _ in range(2):
        sim.advance(1.0)
    assert wait_for(lambda: recorder.stats.gaps == 1)
    sim.faults.inject(FaultKind.USB_UNPLUG, value=0.5)
    sim.advance(0.1)
    assert wait_for(lambda: not link.connected)
    sim.advance(0.5)
    assert wait_for(lambda: link.connected)
    for _ in range(2):
        sim.advance(1.0)
    assert wait_for(lambda: recorder.stats.gaps == 2)
    recorder.stop("stopped")
    reset, lost = gaps(spool)
    assert reset["detail"].startswith('"rig reset:') and lost["detail"].startswith('"link lost:')
    assert int(reset["uptime_end_ms"].removesuffix("i")) < int(reset["uptime_start_ms"].removesuffix("i"))
    rig_ms = int(lost["uptime_end_ms"].removesuffix("i")) - int(lost["uptime_start_ms"].removesuffix("i"))
    assert rig_ms >= 500  # the unplug's half second, at least, of rig time without a frame


@ON_BOTH
def test_a_gap_in_the_workload_is_flagged(influx: InfluxSettings, influx_env: dict[str, str], tmp_path: Path) -> None:
    t0 = 1_700_000_000_000
    lines = []
    for run, gap_at in (("whole-1", None), ("holed-2", 20)):
        tags = RunTags(rig="r", run=run, campaign="holes", slot="top" if gap_at is None else "bottom", profile="p")
        start = t0 if gap_at is None else t0 + 600_000
        bw = [LogPoint(start + 1000 * (i + 1), 1000 if i < 30 else 500, 1, 1) for i in range(60)]
        lines += [
            event_line("run_start", (start - 60_000) * 1_000_000, tags),
            event_line("phase", (start - 60_000) * 1_000_000, tags, "baseline"),
            event_line("phase", start * 1_000_000, tags, "workload"),
            event_line("phase", (start + 61_000) * 1_000_000, tags, "cooldown"),
            event_line("run_stop", (start + 70_000) * 1_000_000, tags, "ok"),
            # a gap before the workload, in the baseline: not the workload's
            gap_line((start - 30_000) * 1_000_000, (start - 25_000) * 1_000_000, 1000, 6000, "link lost", tags),
        ]
        if gap_at is not None:
            ns = (start + gap_at * 1000) * 1_000_000
            lines.append(gap_line(ns, ns + 3_200_000_000, 90_000, 93_200, "recorder restarted", tags))
        lines += fio_interval_lines({"bw": bw}, {1: "w"}, tags)
    write_lines(influx, lines)
    cli = [sys.executable, "-m", "thermrig.cli"]
    table = subprocess.run([*cli, "throttle", "holes"], env=influx_env, capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    flat = re.sub(r"[\s│┃]+", " ", table.stdout)  # the note may wrap inside its cell
    assert "a gap of 3.2 s in the workload at 20 s (recorder restarted)" in flat
    assert flat.count("a gap of") == 1  # the other run's gap was in its baseline
    report = subprocess.run(
        [*cli, "report", "holes", "--out", str(tmp_path / "r")], env=influx_env, capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr
    said = {line.split(":")[1].strip(): line for line in report.stdout.splitlines() if line.startswith("missing: run")}
    assert "a gap of 3.2 s in the workload at 20 s (recorder restarted)" in said["run holed-2"]
    assert "gap" not in said["run whole-1"]


def test_a_recorder_killed_with_sigkill_and_restarted_leaves_a_marked_gap(
    influx: InfluxSettings, influx_env: dict[str, str]
) -> None:
    """As the issue met it: `thermrig rig record` killed with SIGKILL, then started again on the same run."""
    cli = [sys.executable, "-m", "thermrig.cli"]
    sim = subprocess.Popen([*cli, "sim", "--speed", "1"], stdout=subprocess.PIPE, text=True, env=influx_env)
    try:
        assert sim.stdout is not None
        port = next((ln.strip() for ln in iter(sim.stdout.readline, "") if ln.startswith("/")), "")
        assert port, "thermrig sim printed no port"
        record = [*cli, "rig", "record", "--port", port, "--run", "killed", "--campaign", "gaps"]
        first = subprocess.Popen([*record, "--seconds", "60"], env=influx_env, stdout=subprocess.DEVNULL)
        spool = Spool(Path(influx_env["XDG_DATA_HOME"]) / "thermrig" / "spool" / "killed.lp")
        assert wait_for(lambda: spool.path.exists() and spool.path.read_text().count("rig_telemetry,") >= 20, 60)
        first.kill()
        first.wait(timeout=10)
        before = frames(spool)[-1]
        second = subprocess.run([*record, "--seconds", "3"], env=influx_env, capture_output=True, text=True)
        assert second.returncode == 0, second.stdout + second.stderr
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    after = next(f for f in frames(spool) if f[0] > before[0])
    [gap] = influxql(influx, "SELECT * FROM run_events WHERE run = 'killed' AND kind = 'gap'")
    row = dict(zip(gap.columns, gap.values[0], strict=True))
    assert row["detail"].startswith("recorder restarted: no telemetry recorded for")
    assert row["gap_start_ns"] == before[1] and row["time"] == after[1] and row["uptime_start_ms"] == before[0]
    assert row["uptime_end_ms"] == after[0] and row["duration_s"] > 0.1
    starts = influxql(influx, "SELECT count(detail) FROM run_events WHERE run = 'killed' AND kind = 'run_start'")
    assert starts[0].values[0][1] == 2
