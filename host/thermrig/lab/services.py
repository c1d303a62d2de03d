"""Whether a held place's test PC answers: its fio server (a TCP connection) and its SSH server (the
"SSH-" banner). One line each, naming the place and the address."""

from __future__ import annotations

import socket

from thermrig.lab.client import Endpoint
from thermrig.lab.errors import LabError


def check_ssh(server: Endpoint, place: str, timeout: float = 5.0) -> str:
    """The server's SSH banner, or LabError naming the place and address."""
    where = f"place {place}: its test PC's SSH at {server.host}:{server.port}"
    try:
        with socket.create_connection((server.host, server.port), timeout=timeout) as s:
            banner = s.recv(256).split(b"\r\n")[0].decode(errors="replace")
    except OSError as exc:
        raise LabError(f"{where} does not answer ({exc.strerror or exc})") from exc
    if not banner.startswith("SSH-"):
        raise LabError(f"{where} is not an SSH server (it said {banner[:40]!r})")
    return banner
