"""Control socket of a running `thermrig sim`: one JSON request per connection, one JSON reply.

Request: {"fault": "<kind>", "channel": 0, "value": null} or {"clear": true} or {"status": true}, or
{"flash": "<image>"}: restart the firmware on that image (`thermrig flash --board qemu`).
Reply: {"ok": true, "active": [...]} or {"ok": false, "error": "..."}. The client: thermrig.settings.RunningSim.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from thermrig.sim.fault_injection import FaultError, FaultInjector, FaultKind
from thermrig.sim.firmware.base import SimError


class ControlServer:
    def __init__(self, path: Path, faults: FaultInjector, restart: Callable[[Path], None] | None = None) -> None:
        self.path = path
        self.faults = faults
        self.restart = restart
        path.unlink(missing_ok=True)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(4)
        self._thread = threading.Thread(target=self._serve, name="sim-control", daemon=True)

    def start(self) -> ControlServer:
        self._thread.start()
        return self

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                try:
                    request = json.loads(conn.makefile("r").readline())
                    reply = self.handle(request)
                except (ValueError, KeyError, TypeError) as exc:
                    reply = {"ok": False, "error": str(exc)}
                with contextlib.suppress(OSError):
                    conn.sendall((json.dumps(reply) + "\n").encode())

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        if "flash" in request:
            if self.restart is None:
                return {"ok": False, "error": "this simulation cannot be flashed"}
            try:
                self.restart(Path(request["flash"]))
            except (SimError, TimeoutError) as exc:
                return {"ok": False, "error": str(exc)}
        elif request.get("clear"):
            self.faults.clear()
        elif "fault" in request:
            try:
                kind = FaultKind(request["fault"])
            except ValueError:
                known = ", ".join(k.value for k in FaultKind)
                return {"ok": False, "error": f"unknown fault {request['fault']!r}; known: {known}"}
            try:
                self.faults.inject(kind, int(request.get("channel", 0)), request.get("value"))
            except FaultError as exc:
                return {"ok": False, "error": str(exc)}
        return {"ok": True, "active": [i.describe() for i in self.faults.active]}

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self.path.unlink(missing_ok=True)
