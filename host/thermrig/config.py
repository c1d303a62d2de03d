"""Which rig port to use: --port, then $THERMRIG_PORT, then the config file, then a running `thermrig sim`
(each read through thermrig.settings)."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.settings import ConfigError, config_file, config_table, environment, running_sim

__all__ = ["ConfigError", "PortChoice", "resolve_port"]


@dataclass(frozen=True)
class PortChoice:
    port: str
    source: str


def resolve_port(cli_port: str | None) -> PortChoice:
    if cli_port:
        return PortChoice(cli_port, "--port")
    env = environment("THERMRIG_PORT")
    if env:
        return PortChoice(env, "THERMRIG_PORT")
    path = config_file()
    rig, r = config_table("rig", 'a [rig] table with port = "..."')
    port = r.get(rig, "rig", "port", str, 'a string such as "/dev/ttyACM0"', None) if r is not None else None
    if port:
        return PortChoice(str(port), str(path))
    sim = running_sim()
    if sim is not None:
        return PortChoice(sim.port, "running `thermrig sim`")
    raise ConfigError(
        "no rig port: pass --port (a device such as /dev/ttyACM0 or a pyserial URL), set THERMRIG_PORT, "
        f'put [rig] port = "..." in {path}, or start the simulated rig with `thermrig sim`'
    )
