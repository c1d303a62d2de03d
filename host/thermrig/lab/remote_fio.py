"""fio on a place's test PC, in fio's client/server mode: `fio --server` runs there (a systemd unit,
docs/lab.md), `fio --client=HOST,PORT job.fio` runs here and brings the final JSON and the per-interval
logs back, named per host (fio_bw.1.log.HOST). The drive is the test PC's: the job's filename is a path
there."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

from thermrig.analysis.fio_log import LogPoint
from thermrig.fio.runner import FioError, FioResult, fio_binary, read_log
from thermrig.lab.client import Endpoint

_LOG = re.compile(r"^fio_(?P<kind>bw|iops|lat|clat|slat)\.(?P<job>\d+)\.log\.(?P<host>.+)$")


def check_fio_server(server: Endpoint, place: str, timeout: float = 5.0) -> None:
    """One line naming the place and the address when its test PC's fio server does not answer."""
    try:
        with socket.create_connection((server.host, server.port), timeout=timeout):
            pass
    except OSError as exc:
        raise FioError(f"place {place}: its test PC's fio server at {server.host},{server.port} does not answer "
                       f"({exc.strerror or exc})") from exc  # fmt: skip


def host_logs(workdir: Path, kind: str, host: str) -> list[LogPoint]:
    """A per-interval log kind (bw, iops, lat) the client brought back from that host, all jobs, by time."""
    points: list[LogPoint] = []
    for path in sorted(workdir.iterdir()):
        m = _LOG.match(path.name)
        if m and m["kind"] == kind and m["host"] == host:
            points += read_log(path, int(m["job"]))
    return sorted(points, key=lambda p: p.timestamp_ms)


def run_remote_fio(job_text: str, workdir: Path, server: Endpoint, place: str) -> FioResult:
    """Run the job on the place's test PC (its log prefix should be workdir/"fio"): job.fio and fio.json
    stay in workdir with the logs. The result's JSON is fio's, with the client's per-host stats as jobs."""
    check_fio_server(server, place)
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    job = workdir / "job.fio"
    job.write_text(job_text)
    cmd = [fio_binary(), f"--client={server.host},{server.port}", "--output-format=json", str(job)]
    done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise FioError(f"place {place}: fio on its test PC {server.host},{server.port} failed: "
                       f"{why[-1] if why else f'exit {done.returncode}'}")  # fmt: skip
    (workdir / "fio.json").write_text(done.stdout)
    result = json.loads(done.stdout[done.stdout.index("{") :])
    result.setdefault("jobs", [s for s in result.get("client_stats", []) if s.get("jobname") != "All clients"])
    return FioResult(
        result=result,
        bw=host_logs(workdir, "bw", server.host),
        iops=host_logs(workdir, "iops", server.host),
        lat=host_logs(workdir, "lat", server.host),
    )
