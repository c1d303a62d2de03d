"""Where the data goes: the server configured in the environment or config.toml (db/influx_settings.py), else
the user's local server: InfluxDB 1.x (local_server.py) or, once `thermrig db up --server 2` chose it,
InfluxDB 2.x (local_server2.py). The choice is kept in the data folder's `local-server` file."""

from __future__ import annotations

import contextlib
from pathlib import Path

from thermrig.db.influx_settings import InfluxSettings, configured
from thermrig.db.local_server import InfluxServerError, LocalInflux
from thermrig.db.local_server2 import LocalInflux2
from thermrig.settings import data_dir


def _choice_file() -> Path:
    return data_dir() / "local-server"


def chosen_server() -> int:
    """Which local server `thermrig db up` starts without --server, and the commands that start the
    local server when none runs: the one `db up` was last asked for (1 by default)."""
    with contextlib.suppress(OSError, ValueError):
        return int(_choice_file().read_text().strip())
    return 1


def choose_server(version: int) -> None:
    _choice_file().parent.mkdir(parents=True, exist_ok=True)
    _choice_file().write_text(f"{version}\n")


def local_server(version: int | None = None) -> LocalInflux:
    """The user's local server of this version (None: the one running, else the chosen one)."""
    two = LocalInflux2.default()
    if version is None:
        if two.state() is not None:
            return two
        if LocalInflux.default().state() is not None:
            return LocalInflux.default()
        version = chosen_server()
    return two if version == 2 else LocalInflux.default()


def resolve_settings(start_local: bool = True) -> InfluxSettings:
    """The configured server if there is one; else the local server, started if need be."""
    remote = configured()
    if remote is not None:
        return remote
    local = local_server()
    if local.state() is None:
        if not start_local:
            raise InfluxServerError("no InfluxDB configured and the local one is not running: `thermrig db up`")
        local.up()
    return local.settings()
