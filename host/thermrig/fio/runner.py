"""Run fio: live throughput every second from --status-interval JSON dumps (cumulative counters,
differenced), the authoritative per-second logs read at job end, and fio's final JSON kept. With a
server ("HOST,PORT": a drive on another machine, `fio --server` there), fio runs in its client/server
mode: the job runs there, the final JSON and the per-second logs come back here (named per host,
fio_bw.1.log.HOST); the client gives no live dumps."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from thermrig.analysis.fio_log import LogPoint
from thermrig.errors import ThermrigError
from thermrig.priority import in_world
from thermrig.settings import find_tool


class FioError(ThermrigError, RuntimeError):
    """fio failed: it could not start, exited non-zero, or reported a job error."""


@dataclass(frozen=True)
class LiveSample:
    """One second of progress, from the difference of two status dumps."""

    timestamp_ms: int
    read_bps: float
    write_bps: float
    read_iops: float
    write_iops: float


@dataclass
class FioResult:
    result: dict  # fio's final JSON
    bw: list[LogPoint] = field(default_factory=list)  # KiB/s
    iops: list[LogPoint] = field(default_factory=list)
    lat: list[LogPoint] = field(default_factory=list)  # ns
    live: list[LiveSample] = field(default_factory=list)


def fio_binary() -> str:
    found = find_tool("fio")
    if not found.exists():
        raise FioError("fio is not installed: run `make setup` (Debian package fio)")
    return str(found)


def fio_version() -> str:
    return subprocess.run([fio_binary(), "--version"], capture_output=True, text=True, check=True).stdout.strip()


def _totals(dump: dict) -> tuple[int, float, float, float, float]:
    ms = int(dump.get("timestamp_ms", 0))
    rb = wb = ri = wi = 0.0
    for job in dump.get("jobs", []):
        rb += job["read"]["io_bytes"]
        wb += job["write"]["io_bytes"]
        ri += job["read"]["total_ios"]
        wi += job["write"]["total_ios"]
    return ms, rb, wb, ri, wi


def read_log(path: Path, job: int = 1) -> list[LogPoint]:
    points = []
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            points.append(LogPoint(int(parts[0]), int(parts[1]), int(parts[2]), job))
    return points


_LOG = re.compile(r"^fio_(?P<kind>[a-z]+)\.(?P<job>\d+)\.log(\.(?P<host>.+))?$")


def _logs(workdir: Path, kind: str, host: str | None = None) -> list[LogPoint]:
    """A per-second log kind of every job, by time; host: the logs a fio client brought back from it."""
    points: list[LogPoint] = []
    for path in sorted(workdir.iterdir()):
        m = _LOG.match(path.name)
        if m and m["kind"] == kind and m["host"] == host:
            points += read_log(path, int(m["job"]))
    return sorted(points, key=lambda p: p.timestamp_ms)


def _client_result(dump: dict) -> dict:
    """A fio client's final JSON: its per-job stats (client_stats, each with the server's hostname) as jobs."""
    dump.setdefault("jobs", [s for s in dump.get("client_stats", []) if s.get("jobname") != "All clients"])
    return dump


def on_local_nbd(job_text: str) -> bool:
    """Whether the job drives an NBD export on this machine's Unix socket: the virtual drive, whose fio
    is part of the simulated world and runs at its priority (priority.py); fio on a real drive runs as
    the host started it."""
    return bool(re.search(r"^\s*ioengine\s*=\s*nbd\s*$", job_text, re.M)) and "nbd+unix://" in job_text


def run_fio(
    job_text: str,
    workdir: Path,
    on_live: Callable[[LiveSample], None] | None = None,
    stop: threading.Event | None = None,
    server: str | None = None,
) -> FioResult:
    """Run the job in workdir (job.fio, fio.json and the logs end up there; the job's log prefix should
    be workdir/"fio"). stop: ends fio early, keeping what it measured. server: "HOST,PORT" of the fio
    server that runs the job (DriveUnderTest.fio_server), None: here."""
    workdir = workdir.resolve()  # fio runs in workdir: a relative job path would not resolve there
    workdir.mkdir(parents=True, exist_ok=True)
    job = workdir / "job.fio"
    job.write_text(job_text)
    where = [f"--client={server}"] if server else ["--status-interval=1"]
    cmd = [fio_binary(), "--output-format=json", *where, str(job)]
    proc = subprocess.Popen(
        in_world(cmd) if server is None and on_local_nbd(job_text) else cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=workdir,
    )
    assert proc.stdout is not None
    decoder = json.JSONDecoder()
    buf, last, dumps, live = "", None, [], []
    watcher = None
    if stop is not None:

        def watch() -> None:
            while proc.poll() is None:
                if stop.wait(0.2):
                    proc.terminate()  # fio stops its jobs and still writes its result and logs
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
    for chunk in iter(lambda: proc.stdout.read(4096) if proc.stdout else "", ""):
        buf += chunk
        while True:
            stripped = buf.lstrip()
            if not stripped.startswith("{"):
                buf = stripped[stripped.find("{") :] if "{" in stripped else ""
                break
            try:
                dump, end = decoder.raw_decode(stripped)
            except ValueError:
                buf = stripped
                break
            buf = stripped[end:]
            dumps.append(dump)
            now = _totals(dump)
            if last is not None and now[0] > last[0]:
                dt = (now[0] - last[0]) / 1000.0
                sample = LiveSample(now[0], *((n - p) / dt for n, p in zip(now[1:], last[1:], strict=True)))
                live.append(sample)
                if on_live is not None:
                    on_live(sample)
            last = now
    stderr = proc.stderr.read() if proc.stderr else ""
    code = proc.wait()
    if not dumps:
        raise FioError(f"fio produced no result (exit {code}): {_last_words(stderr)}")
    result = _client_result(dumps[-1]) if server else dumps[-1]
    (workdir / "fio.json").write_text(json.dumps(result, indent=1))
    errors = [j.get("error", 0) for j in result.get("jobs", [])]
    if code != 0 and not (stop is not None and stop.is_set()):
        raise FioError(f"fio exited with status {code}: {_last_words(stderr)}")
    if any(errors):
        raise FioError(f"fio job error {errors}: {_last_words(stderr)}")
    host = server.rsplit(",", 1)[0] if server else None
    return FioResult(
        result, _logs(workdir, "bw", host), _logs(workdir, "iops", host), _logs(workdir, "lat", host), live
    )


def _last_words(stderr: str) -> str:
    return stderr.strip()[-500:]
