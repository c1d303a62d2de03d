"""fio on a place's test PC, in fio's client/server mode: `fio --server` runs there (a systemd unit,
docs/lab.md), `fio --client=HOST,PORT job.fio` runs here and brings the final JSON and the per-interval
logs back, named per host (fio_bw.1.log.HOST; thermrig.fio.runner reads them). The drive is the test
PC's: the job's filename is a path there."""

from __future__ import annotations

import socket
from pathlib import Path

from thermrig.fio.runner import FioError, FioResult, run_fio
from thermrig.lab.client import Endpoint


def fio_answers(server: Endpoint, timeout: float = 5.0) -> str | None:
    """None when the fio server accepts a connection, else why not."""
    try:
        with socket.create_connection((server.host, server.port), timeout=timeout):
            return None
    except OSError as exc:
        return str(exc.strerror or exc)


def check_fio_server(server: Endpoint, place: str, timeout: float = 5.0) -> None:
    """One line naming the place and the address when its test PC's fio server does not answer."""
    if (why := fio_answers(server, timeout)) is not None:
        raise FioError(f"place {place}: its test PC's fio server at {server.host},{server.port} does not answer "
                       f"({why})")  # fmt: skip


def check_fio_through_ssh(server: Endpoint, ssh: Endpoint, place: str, key: str = "") -> None:
    """A sealed test PC's fio server (on its loopback) answers through an SSH forward, opened and closed
    here; LabError naming the place and the address when not."""
    from thermrig.lab.ssh_forward import SshForward

    with SshForward(ssh, server.port, f"place {place}: its test PC's fio server at {server.host},{server.port}", key):
        pass


def run_remote_fio(job_text: str, workdir: Path, server: Endpoint, place: str) -> FioResult:
    """Run the job on the place's test PC (its log prefix should be workdir/"fio"): job.fio and fio.json
    stay in workdir with the logs. The result's JSON is fio's, with the client's per-host stats as jobs."""
    check_fio_server(server, place)
    try:
        return run_fio(job_text, workdir, server=f"{server.host},{server.port}")
    except FioError as exc:
        raise FioError(f"place {place}: fio on its test PC {server.host},{server.port} failed: {exc}") from exc
