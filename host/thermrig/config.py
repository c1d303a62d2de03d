"""Which rig port to use: --port, then $THERMRIG_PORT, then the config file, then a running `thermrig sim`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from thermrig.errors import ThermrigError
from thermrig.paths import config_dir, runtime_dir
from thermrig.toml_file import TomlFile


class ConfigError(ThermrigError, RuntimeError):
    pass


@dataclass(frozen=True)
class PortChoice:
    port: str
    source: str


def config_file() -> Path:
    return Path(os.environ.get("THERMRIG_CONFIG") or config_dir() / "config.toml")


def sim_state_file() -> Path:
    return runtime_dir() / "sim.json"


def _running_sim_port() -> str | None:
    path = sim_state_file()
    try:
        state = json.loads(path.read_text())
        os.kill(int(state["pid"]), 0)
    except (OSError, ValueError, KeyError):
        return None
    return str(state["port"])


def resolve_port(cli_port: str | None) -> PortChoice:
    if cli_port:
        return PortChoice(cli_port, "--port")
    env = os.environ.get("THERMRIG_PORT")
    if env:
        return PortChoice(env, "THERMRIG_PORT")
    path = config_file()
    if path.exists():
        r = TomlFile.read(path, ConfigError)
        port = r.get(r.data, "rig", "rig", dict, 'a [rig] table with port = "..."', {}).get("port")
        if port is not None and not isinstance(port, str):
            raise r.located("rig", "port", 'port must be a string such as "/dev/ttyACM0"')
        if port:
            return PortChoice(port, str(path))
    sim = _running_sim_port()
    if sim:
        return PortChoice(sim, "running `thermrig sim`")
    raise ConfigError(
        "no rig port: pass --port (a device such as /dev/ttyACM0 or a pyserial URL), set THERMRIG_PORT, "
        f'put [rig] port = "..." in {path}, or start the simulated rig with `thermrig sim`'
    )
