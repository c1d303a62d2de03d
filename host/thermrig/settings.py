"""Everything thermrig reads from outside its own code, each read here once: the process environment,
the user's config.toml, the state a running `thermrig sim` leaves behind, and where each external tool
(influxd, QEMU, MicroPython, mpremote, rigsim, ...) is found.

Environment: XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_RUNTIME_DIR, XDG_STATE_HOME (the user's folders),
THERMRIG_CONFIG (the config file), THERMRIG_PORT (the rig), THERMRIG_INFLUX_* (db/influx_settings.py),
THERMRIG_HARDWARE_DIR (the parameter files), THERMRIG_WORLD_NICE (priority.py), and one variable per tool
(TOOLS)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thermrig.errors import ThermrigError
from thermrig.paths import checkout, packaged
from thermrig.toml_file import TomlFile


class ConfigError(ThermrigError, RuntimeError):
    pass


def environment(name: str) -> str | None:
    """A variable of the process environment; unset and empty are the same."""
    return os.environ.get(name) or None


# --- the user's folders (XDG) -------------------------------------------------------------------------


def _xdg(var: str, fallback: str) -> Path:
    return Path(environment(var) or Path.home() / fallback) / "thermrig"


def config_dir() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config")


def data_dir() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share")


def runtime_dir() -> Path:
    base = environment("XDG_RUNTIME_DIR")
    return Path(base) / "thermrig" if base else _xdg("XDG_STATE_HOME", ".local/state")


# --- config.toml ------------------------------------------------------------------------------------


def config_file() -> Path:
    return Path(environment("THERMRIG_CONFIG") or config_dir() / "config.toml")


def config_table(table: str, expected: str) -> tuple[dict[str, object], TomlFile | None]:
    """One table of the user's config file ({} if the file or the table is missing), with the reader
    that locates errors in it (file:line)."""
    path = config_file()
    if not path.exists():
        return {}, None
    r = TomlFile.read(path, ConfigError)
    return r.get(r.data, table, table, dict, expected, {}), r


# --- a running `thermrig sim` ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunningSim:
    """What a running `thermrig sim` leaves in the runtime folder: its port, process, control socket and
    the firmware it runs."""

    port: str
    pid: int
    control: Path
    firmware: str
    drive: str | None = None  # the virtual drive's NBD URI, when it serves one (`thermrig sim --drive`)

    @staticmethod
    def state_file() -> Path:
        return runtime_dir() / "sim.json"

    def write(self) -> None:
        path = self.state_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "port": self.port,
            "pid": self.pid,
            "control": str(self.control),
            "firmware": self.firmware,
            "drive": self.drive,
        }
        path.write_text(json.dumps(state))

    @classmethod
    def remove(cls) -> None:
        cls.state_file().unlink(missing_ok=True)

    def request(self, message: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """One request to its control socket (thermrig.sim.control), one JSON reply."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.control))
            s.sendall((json.dumps(message) + "\n").encode())
            reply: dict[str, Any] = json.loads(s.makefile("r").readline())
            return reply


def running_sim() -> RunningSim | None:
    """The `thermrig sim` whose state file is there and whose process still runs; None otherwise."""
    try:
        state = json.loads(RunningSim.state_file().read_text())
        sim = RunningSim(
            str(state["port"]),
            int(state["pid"]),
            Path(state["control"]),
            state.get("firmware", "rigsim"),
            state.get("drive"),
        )
        os.kill(sim.pid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return sim


# --- external tools -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    """Where a tool is looked for, in order: its variable, beside this Python (the venv's), on PATH (or
    PATH first, path_first), and then a default (which may not exist: the caller says how to get it)."""

    env: str | None = None
    beside_python: bool = False
    on_path: str | None = None
    default: Callable[[], Path] | None = None
    path_first: bool = False


def zephyr_qemu_build() -> Path:
    """Where `make firmware-qemu` builds the emulated board's image in the checkout (dev workflow); an
    installed package has none (the relative path exists nowhere: THERMRIG_ZEPHYR_ELF names an image)."""
    return (checkout() or Path()) / "build" / "zephyr" / "qemu_cortex_m3"


def zephyr_board_build() -> Path:
    """Where `make firmware-board` builds the board build (the Nucleo's HAL on native_sim_64) in the
    checkout; an installed package has none (THERMRIG_ZEPHYR_BOARD names one)."""
    return (checkout() or Path()) / "build" / "zephyr" / "native_sim_64"


def pico_rp2_build() -> Path:
    """Where `make firmware-pico` builds stock MicroPython for the Pico (firmware.uf2, and the RP2040's
    mask ROM beside it) in the checkout; an installed package has none (THERMRIG_PICO_UF2 names one)."""
    return (checkout() or Path()) / "build" / "micropython-rp2"


TOOLS: dict[str, Tool] = {
    "rigsim": Tool("THERMRIG_RIGSIM", default=lambda: packaged("bin/rigsim")),
    "zephyr-elf": Tool("THERMRIG_ZEPHYR_ELF", default=lambda: zephyr_qemu_build() / "zephyr" / "zephyr.elf"),
    # The board build: the Nucleo's HAL on native_sim_64 (make firmware-board), a host program.
    "zephyr-board": Tool("THERMRIG_ZEPHYR_BOARD", default=lambda: zephyr_board_build() / "zephyr" / "zephyr.exe"),
    # `make firmware-emulator`: the Nucleo-F411RE image with the emulator's config (docs/firmware.md)
    "stm32-emulator-elf": Tool(
        "THERMRIG_STM32_EMULATOR_ELF",
        default=lambda: (
            (checkout() or Path()) / "build" / "zephyr" / "nucleo_f411re_emulator" / "zephyr" / "zephyr.elf"
        ),
    ),
    # `make firmware-pico`: stock MicroPython v1.28.0 for RPI_PICO, and the RP2040 B1 bootrom beside it
    "pico-uf2": Tool("THERMRIG_PICO_UF2", default=lambda: pico_rp2_build() / "firmware.uf2"),
    "node": Tool("THERMRIG_NODE", on_path="node"),  # runs the emulated RP2040 (rp2040js)
    "influxd": Tool(
        "THERMRIG_INFLUXD",
        on_path="influxd",
        default=lambda: Path(environment("GOPATH") or Path.home() / "go") / "bin" / "influxd",
    ),
    # InfluxDB 2.x, built by `make setup` (scripts/setup_influxd2.sh) under its own name
    "influxd2": Tool(
        "THERMRIG_INFLUXD2",
        on_path="influxd2",
        default=lambda: Path(environment("GOPATH") or Path.home() / "go") / "bin" / "influxd2",
    ),
    # the embedded default of earlier releases, built by `make setup` for the upgrade test
    "influxd-1.8.10": Tool(
        "THERMRIG_INFLUXD_1_8",
        on_path="influxd-1.8.10",
        default=lambda: Path(environment("GOPATH") or Path.home() / "go") / "bin" / "influxd-1.8.10",
    ),
    "micropython": Tool("THERMRIG_MICROPYTHON", beside_python=True, on_path="micropython"),
    "mpremote": Tool("THERMRIG_MPREMOTE", beside_python=True, on_path="mpremote"),
    "pio": Tool(on_path="pio", beside_python=True, path_first=True),
    "qemu-system-arm": Tool(on_path="qemu-system-arm"),
    "fio": Tool(on_path="fio"),
    "nbdkit": Tool(on_path="nbdkit"),
    "openocd": Tool(on_path="openocd"),
    "drive-plugin": Tool("THERMRIG_DRIVE_PLUGIN", default=lambda: packaged("bin/thermrig_drive.so")),
    "nvme": Tool(on_path="nvme"),
    "wipefs": Tool(on_path="wipefs"),
}


def find_tool(name: str) -> Path:
    """Where the tool `name` (a key of TOOLS) is; the path may not exist when it is not installed."""
    tool = TOOLS[name]
    if tool.env and (env := environment(tool.env)):
        return Path(env)
    beside = Path(sys.executable).with_name(name)
    found = [beside] if tool.beside_python and beside.exists() else []
    if tool.on_path and (on_path := shutil.which(tool.on_path)):
        found.insert(0 if tool.path_first else len(found), Path(on_path))
    if found:
        return found[0]
    if tool.default is not None:
        return tool.default()
    return beside if tool.beside_python else Path(name)
