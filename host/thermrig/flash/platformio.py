"""Nucleo boards through PlatformIO: `pio run -e BOARD` builds, `-t upload` flashes over the on-board
ST-LINK; the rig then answers on its serial port (the ST-LINK's virtual COM port)."""

from __future__ import annotations

from pathlib import Path

from thermrig.config import ConfigError, resolve_port
from thermrig.flash.base import Flasher, FlashError, run_tool, stamped_version
from thermrig.paths import REPO_ROOT
from thermrig.settings import find_tool


def pio() -> str:
    """PlatformIO's command: on PATH, else beside this Python (the project's venv)."""
    found = find_tool("pio")
    if not found.exists():
        raise FlashError("PlatformIO is not installed: `pip install 'thermrig[firmware]'` (docs/firmware.md)")
    return str(found)


class PlatformIOFlasher(Flasher):
    def __init__(self, board: str) -> None:
        self.board = board

    def resolve_port(self, port: str | None) -> str:
        try:
            return resolve_port(port).port
        except ConfigError as exc:
            raise FlashError(f"no port for the {self.board} after flashing: pass --port (e.g. /dev/ttyACM0)") from exc

    def steps(self, port: str) -> list[str]:
        return [f"build: {pio()} run -e {self.board}", f"upload: {pio()} run -e {self.board} -t upload (ST-LINK)"]

    def build(self) -> str:
        run_tool([pio(), "run", "-e", self.board], "build", REPO_ROOT)
        stamps = sorted((REPO_ROOT / ".pio" / "build" / self.board).rglob("rig_version.h"))
        return stamped_version(stamps[0] if stamps else None)

    def image(self) -> Path:
        """The image the build leaves (platformio.ini's build_dir), what an ST-LINK tool programs."""
        return REPO_ROOT / "build" / "pio" / self.board / "firmware.elf"

    def upload(self, port: str) -> None:
        run_tool([pio(), "run", "-e", self.board, "-t", "upload"], "upload", REPO_ROOT)
