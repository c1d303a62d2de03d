"""Flashing the MicroPython firmware onto a Raspberry Pi Pico that already runs MicroPython: copy the
board's files with mpremote, reset it, wait for its USB serial port to come back, and check that HELLO
reports the firmware and version that were copied."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from thermrig.link.rig_link import NakError, RigLink, RigTimeout
from thermrig.link.transport import PortError
from thermrig.plant.firmware.micropython import firmware_dir

FW_NAME = "thermrig-micropython"
BOARD_FILES = ("thermrig_fw", "main.py", "bootcheck.py")  # sim_main.py stays behind
SIM_ONLY = ("hal_sim.py", "sim_main.py", "__pycache__")
PORT_TIMEOUT_S = 15.0  # the Pico re-enumerates on USB after its reset
MPREMOTE_TIMEOUT_S = 120.0


class FlashError(RuntimeError):
    """The firmware could not be installed, or the board did not come back running it."""


def mpremote_binary() -> str:
    """$THERMRIG_MPREMOTE, else mpremote beside this Python (the venv's), else the one on PATH."""
    env = os.environ.get("THERMRIG_MPREMOTE")
    if env:
        return env
    beside = Path(sys.executable).with_name("mpremote")
    return str(beside) if beside.exists() else "mpremote"


def firmware_version(source: Path | None = None) -> str:
    """The version the firmware reports in HELLO, from its configuration (thermrig_fw/config.py)."""
    config = ((source or firmware_dir()) / "thermrig_fw" / "config.py").read_text()
    m = re.search(r'^FW_VERSION = b"([^"]+)"', config, re.MULTILINE)
    if m is None:
        raise FlashError("thermrig_fw/config.py declares no FW_VERSION")
    return m.group(1)


@dataclass(frozen=True)
class PicoFlasher:
    port: str
    source: Path
    mpremote: str = "mpremote"

    def stage(self, dest: Path) -> Path:
        """What goes onto the board, in dest: the firmware without the simulation's files."""
        for name in BOARD_FILES:
            src = self.source / name
            if src.is_dir():
                shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(*SIM_ONLY))
            else:
                shutil.copy2(src, dest / name)
        return dest

    def copy_command(self) -> list[str]:
        """Run in the staged folder. `resume`: no soft reset first, which would stop the timer that
        feeds the watchdog of an interrupted firmware (main.py) and reset the board mid-copy."""
        return [self.mpremote, "connect", self.port, "resume", "fs", "cp", "-r", *BOARD_FILES, ":."]

    def reset_command(self) -> list[str]:
        return [self.mpremote, "connect", self.port, "resume", "reset"]


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=MPREMOTE_TIMEOUT_S)
    except FileNotFoundError as exc:
        raise FlashError(f"{cmd[0]} not found: `pip install mpremote` (make venv does)") from exc
    except subprocess.TimeoutExpired as exc:
        raise FlashError(f"`{' '.join(cmd[1:])}` did not finish within {MPREMOTE_TIMEOUT_S:.0f} s") from exc
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}").splitlines()[-1]
        raise FlashError(f"mpremote failed ({' '.join(cmd[3:])}): {last}")


def wait_for_hello(port: str, timeout: float = PORT_TIMEOUT_S) -> tuple[str, str]:
    """(firmware, version) from HELLO once the port is back after the reset."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with RigLink(port) as link:
                info = link.hello()
                return info.firmware, info.version
        except (PortError, RigTimeout) as exc:
            last = exc
            time.sleep(0.25)
        except NakError as exc:  # NAK BOOT: MicroPython runs, the firmware cannot (version, missing module)
            raise FlashError(f"the board on {port} cannot start the firmware: {exc}") from exc
    raise FlashError(f"the board did not answer HELLO on {port} within {timeout:.0f} s after its reset: {last}")


def flash_pico(
    port: str,
    dry_run: bool = False,
    echo: Callable[[str], None] = print,
    source: Path | None = None,
    port_timeout: float = PORT_TIMEOUT_S,
) -> str:
    """Copy the firmware to the Pico on `port`, reset it, check HELLO; returns the version it reports.
    dry_run: print the commands only."""
    flasher = PicoFlasher(port, source or firmware_dir(), mpremote_binary())
    want = firmware_version(flasher.source)
    with tempfile.TemporaryDirectory(prefix="thermrig-pico-") as tmp:
        staged = flasher.stage(Path(tmp))
        steps = [(flasher.copy_command(), staged), (flasher.reset_command(), None)]
        for cmd, cwd in steps:
            echo(("(in the firmware folder) " if cwd else "") + " ".join(cmd))
            if not dry_run:
                _run(cmd, cwd)
    if dry_run:
        echo(f"then: wait for {port} and check HELLO reports {FW_NAME} {want}")
        return want
    echo(f"waiting for {port} to answer HELLO")
    fw, ver = wait_for_hello(port, port_timeout)
    if (fw, ver) != (FW_NAME, want):
        raise FlashError(f"the board reports {fw} {ver} after flashing, expected {FW_NAME} {want}")
    echo(f"{port}: {fw} {ver}")
    return ver
