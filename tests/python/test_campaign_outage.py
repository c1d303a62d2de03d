"""An InfluxDB outage during a campaign, as a user meets it: the real influxd stopped during run 1 of 3
and started again during run 2 (run 1's points reach it while run 2 goes on, and its summary is completed
at run 2's end), then stopped again during run 3's workload (10 s of fio, so the recorder still writes
into the outage) until the campaign has ended. Each step waits for the event it follows (a line the
campaign prints, run 1's manifest saying it is analysed), not for a time. Nothing may go silently
missing: one line per outage says InfluxDB is unreachable (no client-library warnings), the closing line
names the run whose points wait in its spool and whose summary is incomplete, `db status` and `db drain`
find that spool in the campaign folder, and `thermrig throttle` marks the run instead of leaving it out.
Run 3's summary and the campaign's results are completed by `db drain`: every run's summary ends with
the same fields (10 s jobs on a file: no throttle figures, so the campaign's results hold no cells; the
campaign's own results are checked on the recorded campaign, test_analysis_campaign)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, file_drive, manifests, run_ids, start_run, thermrig
from influx_servers import ON_BOTH
from waiting import wait_for

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.local_server import LocalInflux
from thermrig.db.query import influxql

STEP_TIMEOUT_S = 240.0


class Output:
    """A child's stdout, line by line, waited on for the line a phase prints."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        assert proc.stdout is not None
        stream = proc.stdout
        threading.Thread(target=lambda: [*map(self._queue.put, stream), self._queue.put(None)], daemon=True).start()

    def wait_for(self, *parts: str, after: int = -1) -> int:
        """The index of the first line after `after` holding every part, waiting for it; fails at the
        child's end or after STEP_TIMEOUT_S."""
        deadline = time.monotonic() + STEP_TIMEOUT_S
        seen = after + 1
        while time.monotonic() < deadline:
            for i in range(seen, len(self.lines)):
                if all(p in self.lines[i] for p in parts):
                    return i
            seen = len(self.lines)
            try:
                line = self._queue.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:  # it exited: why is on its stderr
                said = self.proc.stderr.read()[-3000:] if self.proc.stderr else ""
                pytest.fail(f"the campaign ended before printing {parts}:\n" + "".join(self.lines[-30:]) + said)
            self.lines.append(line)
        pytest.fail(f"no line with {parts} within {STEP_TIMEOUT_S:.0f} s:\n" + "".join(self.lines[-30:]))

    def rest(self) -> str:
        while (line := self._queue.get(timeout=STEP_TIMEOUT_S)) is not None:
            self.lines.append(line)
        return "".join(self.lines)


def analysed(folder: Path, index: int) -> bool:
    """Whether the campaign's run `index` (1-based) has its full summary written, as its manifest says."""
    return any(m.get("index") == index and m.get("analysed") is True for m in manifests(folder).values())


def summary_fields(influx: InfluxSettings, campaign: str) -> dict[str, dict[str, object]]:
    """Each run's run_summary fields (those set), by run."""
    out = {}
    for s in influxql(influx, f"SELECT * FROM run_summary WHERE campaign = '{campaign}' GROUP BY run"):
        row = dict(zip(s.columns, s.values[-1], strict=True))
        out[s.tags["run"]] = {k: v for k, v in row.items() if v is not None and k != "time"}
    return out


@pytest.mark.timeout(900)
@ON_BOTH
def test_an_influxdb_outage_leaves_no_data_silently_missing(
    tmp_path: Path, influx_server: LocalInflux, influx_env: dict[str, str]
) -> None:
    slots = ("top", "underside", "bottom")
    spec = CampaignFile("outage", file_drive(tmp_path, "64m"), seed=5, slots=slots, runtime_s=10)
    path = spec.write(tmp_path)
    out = tmp_path / "runs"
    proc = start_run(path, out, influx_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = Output(proc)
        lines.wait_for("run 1/3", ": baseline")
        influx_server.down()
        lines.wait_for("unavailable", "points are kept in the spool")
        second_run = lines.wait_for("run 2/3", ": equilibrium")
        influx_server.up()  # the same port: the campaign's writers reach it again
        lines.wait_for("InfluxDB answers again", after=second_run)
        third_run = lines.wait_for("run 3/3", ": equilibrium", after=second_run)
        assert wait_for(lambda: analysed(out, index=1), timeout=STEP_TIMEOUT_S), "run 1 never analysed"
        lines.wait_for("run 3/3", ": workload", after=third_run)
        influx_server.down()
        stdout = lines.rest()
        stderr = proc.stderr.read() if proc.stderr else ""
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    first, second, third = sorted(run_ids(out, "outage", 3))
    assert "retriable" not in stderr + stdout and "Retrying" not in stderr + stdout  # the library stays quiet
    said = [line for line in stdout.splitlines() if line.startswith("InfluxDB at")]
    assert len(said) == 2 and all("points are kept in the spool" in line for line in said), stdout  # one per outage
    assert "campaign outage: done, 3 runs" in stdout and "run 4/3" not in stdout
    closing = [line for line in stdout.splitlines() if "not all in InfluxDB" in line]
    assert closing and third in closing[0] and "thermrig db drain" in closing[0], closing
    assert first not in closing[0] and second not in closing[0]
    [finished] = [line for line in stdout.splitlines() if "campaign outage finished" in line]
    assert "3 of 3 runs ok, 2 summaries complete" in finished and f"(complete=false) for {third}:" in finished
    assert first not in finished and second not in finished and "every summary complete" not in stdout
    assert "the campaign's results are not written yet" in stdout  # InfluxDB was down at its end
    runs = manifests(out)
    for run in (first, second):  # run 1 sent while run 2 went on and analysed at its end; run 2 at once
        assert runs[run]["all_points_stored"] and runs[run]["analysed"]
    assert not runs[third]["all_points_stored"] and runs[third]["analysed"] is False

    status = thermrig("db", "status", env=influx_env)
    assert "1 runs with" in status.stdout and third in status.stdout and str(out) in status.stdout
    assert f"summary incomplete (complete=false) for {third} until their points are all in InfluxDB" in status.stdout
    influx_server.up()
    table = thermrig("throttle", "outage", "--runs-from", str(out), env=influx_env)
    assert table.returncode == 0, table.stdout + table.stderr
    assert "(incomplete)" in table.stdout and f"incomplete: {third}" in table.stdout
    report = thermrig("report", "outage", "--out", str(tmp_path / "report"), env=influx_env)
    assert report.returncode == 0, report.stdout + report.stderr
    assert f"missing: run {third}: points still in its spool" in report.stdout
    assert f"missing: run {first}: points still" not in report.stdout
    influx = influx_server.settings()
    before = summary_fields(influx, "outage")
    # run 1 analysed at run 2's end (a 10 s job: too short for a throttle figure, so not complete)
    assert before[first]["analysed"] is True and before.get(third, {}).get("complete") in (None, False)
    drained = thermrig("db", "drain", env=influx_env)
    assert drained.returncode == 0 and third in drained.stdout, drained.stdout + drained.stderr
    assert f"wrote the full summaries of {third}" in drained.stdout and "campaign's results again" in drained.stdout
    assert manifests(out)[third]["all_points_stored"] and manifests(out)[third]["analysed"]
    after = summary_fields(influx, "outage")
    print(
        f"run_summary fields before drain: { ({r: len(f) for r, f in before.items()}) }, after: "
        f"{ ({r: len(f) for r, f in after.items()}) }"
    )
    print(f"missing: {after[first]['missing']!r} / {after[third]['missing']!r}")
    assert after[third]["analysed"] is True and after[third]["complete"] == after[first]["complete"]
    for run in (first, second, third):  # what a 10 s job lacks, and nothing of the outage
        assert "s of throughput (onset and depth need" in after[run]["missing"] and "spool" not in after[run]["missing"]
    assert {"complete", "analysed", "missing", "peak_drive_ctrl_c", "baseline_ctrl_c"} <= set(after[third])
    assert len(after[third]) > len(before.get(third, {})) + 20
    assert "0 runs with" in thermrig("db", "status", env=influx_env).stdout
    table = thermrig("throttle", "outage", "--runs-from", str(out), env=influx_env)
    assert table.returncode == 0 and "incomplete" not in table.stdout
    assert set(json.loads((out / "state.json").read_text())["completed"]) == {first, second, third}

    # A run whose points are all in but whose summary was never written (InfluxDB gone between the two):
    # the commands that read say so and write nothing; `thermrig analyze` writes it and says so.
    manifest_path = out / third / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "analysed": False}))
    written = summary_fields(influx, "outage")
    said = f"summary incomplete (complete=false) for {third}: their points are all in InfluxDB"
    for args in (
        ("throttle", "outage"),
        ("report", "outage", "--out", str(tmp_path / "report2")),
        ("db", "status"),
        ("query", "SELECT count(*) FROM run_summary WHERE campaign = 'outage'"),
    ):
        r = thermrig(*args, env=influx_env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert said in r.stdout + r.stderr and "thermrig analyze" in r.stdout + r.stderr, (args, r.stdout, r.stderr)
        assert json.loads(manifest_path.read_text())["analysed"] is False, args  # nothing written
    assert summary_fields(influx, "outage") == written
    analyzed = thermrig("analyze", "outage", env=influx_env)
    assert analyzed.returncode == 0, analyzed.stdout + analyzed.stderr
    assert f"wrote the full summaries of {third}" in analyzed.stdout + analyzed.stderr
    assert json.loads(manifest_path.read_text())["analysed"] is True
