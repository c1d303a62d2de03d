"""A Raspberry Pi Pico running MicroPython: "building" stages the board's files of firmware/micropython with this
checkout's version stamp (or a release's files as they are, with the manifest's version), the upload copies them with
mpremote and resets the board; the rig then answers on the same USB serial port (docs/micropython.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from thermrig.config import ConfigError, resolve_port
from thermrig.firmware_identity import checkout_version, micropython_firmware_dir
from thermrig.flash.flasher import Flasher, FlashError, run_tool
from thermrig.pico_files import BOARD_FILES, SIM_ONLY, stage
from thermrig.settings import find_tool

__all__ = ["BOARD_FILES", "SIM_ONLY", "PicoFlasher", "mpremote_binary"]


def mpremote_binary() -> str:
    """$THERMRIG_MPREMOTE, else mpremote beside this Python (the venv's), else the one on PATH."""
    return str(find_tool("mpremote"))


class PicoFlasher(Flasher):
    board = "pico"

    def __init__(self, source: Path | None = None, version: str | None = None) -> None:
        self.source = source or micropython_firmware_dir()
        self.version = version  # a release's: its files already carry it
        # A release's folder holds exactly what goes onto the board (bytecode: bootcheck.mpy, ...).
        self.files = BOARD_FILES if version is None else tuple(sorted(p.name for p in self.source.iterdir()))
        self._tmp = tempfile.TemporaryDirectory(prefix="thermrig-pico-")
        self.staged = Path(self._tmp.name)

    def resolve_port(self, port: str | None) -> str:
        try:
            return resolve_port(port).port
        except ConfigError as exc:
            raise FlashError("no port for the Pico: pass --port (e.g. /dev/ttyACM0)") from exc

    def copy_command(self, port: str, tool: str = "") -> list[str]:
        """Run in the staged folder. `resume`: no soft reset first, which would stop the timer that
        feeds the watchdog of the interrupted firmware and let it reset the board in mid-copy. tool:
        mpremote as named on the machine that runs it (default: this host's)."""
        return [tool or mpremote_binary(), "connect", port, "resume", "fs", "cp", "-r", *self.files, ":."]

    def reset_command(self, port: str, tool: str = "") -> list[str]:
        return [tool or mpremote_binary(), "connect", port, "resume", "reset"]

    def steps(self, port: str) -> list[str]:
        return [
            f"build: stage {', '.join(self.files)} from {self.source} with ver={self.version or checkout_version()}",
            f"upload: {' '.join(self.copy_command(port))}  (in the staged folder)",
            f"upload: {' '.join(self.reset_command(port))}",
        ]

    def build(self) -> str:
        """Stage what goes onto the board, stamped with this checkout's version (a release's files are
        staged as they are); returns the stamp."""
        return stage(self.source, self.staged, self.files, self.version)

    def upload(self, port: str) -> None:
        run_tool(self.copy_command(port), "upload", self.staged)
        run_tool(self.reset_command(port), "reset", self.staged)
