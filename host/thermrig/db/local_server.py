"""The embedded default: influxd 1.x (EMBEDDED_VERSION) on loopback, its data under the user's data directory.

`thermrig db up` starts it detached and remembers its port; tests start private ones in temp dirs. A data
folder an earlier release's influxd 1.8.10 wrote is read as it is (tests/python/test_influx_upgrade.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import urllib3

from thermrig.db.influx_settings import DEFAULT_DATABASE, InfluxSettings
from thermrig.errors import ThermrigError
from thermrig.settings import data_dir, find_tool

START_TIMEOUT_S = 30.0
EMBEDDED_VERSION = "v1.13.2"  # what scripts/setup_influxd.sh builds as influxd


class InfluxServerError(ThermrigError, RuntimeError):
    pass


def influxd_binary() -> Path:
    return find_tool("influxd")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        # As influxd binds: connections of the previous server in TIME_WAIT do not make the port taken
        # (without this, a restarted server moved to a new port and writers kept calling the old one).
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


CONFIG = """# written by thermrig: influxd 1.x on loopback only
reporting-disabled = true
bind-address = "127.0.0.1:{rpc_port}"
[meta]
  dir = "{root}/meta"
[data]
  dir = "{root}/data"
  wal-dir = "{root}/wal"
  query-log-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:{http_port}"
  auth-enabled = {auth}
  log-enabled = false
[logging]
  level = "warn"
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
"""


@dataclass
class LocalInflux:
    root: Path  # holds meta/, data/, wal/, influxd.toml, influxd.log, state.json

    @classmethod
    def default(cls) -> LocalInflux:
        return cls(data_dir() / "influxdb")

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    def state(self) -> dict | None:
        try:
            state = json.loads(self.state_file.read_text())
            os.kill(int(state["pid"]), 0)
        except (OSError, ValueError, KeyError):
            return None
        return state

    @property
    def url(self) -> str:
        state = self.state()
        if state is None:
            raise InfluxServerError("the local InfluxDB is not running: start it with `thermrig db up`")
        return f"http://127.0.0.1:{state['http_port']}"

    def settings(self) -> InfluxSettings:
        return InfluxSettings(url=self.url, bucket=f"{DEFAULT_DATABASE}/autogen", database=DEFAULT_DATABASE)

    def up(self, http_port: int | None = None, auth: bool = False) -> str:
        """Start influxd unless it runs; create the database; return the URL. auth: authentication on and
        no user yet, nor the database (InfluxDB refuses everything until an admin exists: the caller
        makes the users and the database, thermrig.lab.influx_users.provision)."""
        if self.state() is not None:
            return self.url
        binary = influxd_binary()
        if not binary.exists():
            raise InfluxServerError(f"{binary} not found: run `make setup` (it builds influxd {EMBEDDED_VERSION})")
        self.root.mkdir(parents=True, exist_ok=True)
        previous = self._previous_port()
        port = http_port or (previous if previous and _port_free(previous) else free_port())
        rpc_port = free_port()
        config = self.root / "influxd.toml"
        config.write_text(CONFIG.format(root=self.root, http_port=port, rpc_port=rpc_port, auth=str(auth).lower()))
        log = (self.root / "influxd.log").open("ab")
        proc = subprocess.Popen(
            [str(binary), "run", "-config", str(config)],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # survives the command that started it; `db down` stops it
        )
        self.state_file.write_text(json.dumps({"pid": proc.pid, "http_port": port}))
        url = f"http://127.0.0.1:{port}"
        self._wait_ready(url, proc)
        if not auth:
            self._query(url, f"CREATE DATABASE {DEFAULT_DATABASE}")
        return url

    def _previous_port(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, KeyError):
            return int(json.loads(self.state_file.read_text())["http_port"])
        return None

    def _wait_ready(self, url: str, proc: subprocess.Popen[bytes]) -> None:
        http = urllib3.PoolManager(timeout=1.0, retries=False)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = (self.root / "influxd.log").read_text(errors="replace")[-800:]
                raise InfluxServerError(f"influxd exited with status {proc.returncode}:\n{tail}")
            with contextlib.suppress(urllib3.exceptions.HTTPError):
                if http.request("GET", f"{url}/ping").status == 204:
                    return
            time.sleep(0.1)
        raise InfluxServerError(f"influxd did not answer on {url} within {START_TIMEOUT_S:.0f} s")

    @staticmethod
    def _query(url: str, q: str) -> None:
        r = urllib3.PoolManager(timeout=10.0).request("POST", f"{url}/query", fields={"q": q})
        if r.status != 200:
            raise InfluxServerError(f"{q}: HTTP {r.status} {r.data[:200]!r}")

    def down(self, kill: bool = False) -> bool:
        """Stop influxd (SIGTERM, or SIGKILL to simulate a crash); False if it was not running."""
        state = self.state()
        if state is None:
            return False
        pid = int(state["pid"])
        os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            except OSError:
                return True
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        return True

    def size_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.root.rglob("*") if f.is_file())
