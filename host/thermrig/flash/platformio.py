"""Nucleo boards through PlatformIO: `pio run -e BOARD` builds, `-t upload` flashes over the on-board
ST-LINK; the rig then answers on its serial port (the ST-LINK's virtual COM port)."""

from __future__ import annotations

import configparser
import os
from pathlib import Path

from thermrig.config import ConfigError, resolve_port
from thermrig.flash.flasher import Flasher, FlashError, built_version, run_tool
from thermrig.paths import checkout
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
        run_tool([pio(), "run", "-e", self.board], "build", source_checkout())
        return built_version(self.image())

    def image(self) -> Path:
        """The image the build leaves, what an ST-LINK tool programs: in $PLATFORMIO_BUILD_DIR, as PlatformIO
        itself honours it, else platformio.ini's build_dir."""
        return build_dir() / self.board / "firmware.elf"

    def upload(self, port: str) -> None:
        run_tool([pio(), "run", "-e", self.board, "-t", "upload"], "upload", source_checkout())


def source_checkout() -> Path:
    """The checkout PlatformIO builds in (platformio.ini); an installed package flashes release files."""
    root = checkout()
    if root is None:
        raise FlashError(
            "building the firmware needs the source checkout; an installed thermrig flashes release files: "
            "--release DIR --board B, or --image FILE (docs/firmware.md)"
        )
    return root


def build_dir() -> Path:
    if override := os.environ.get("PLATFORMIO_BUILD_DIR"):
        return Path(override)
    root = source_checkout()
    ini = configparser.ConfigParser(inline_comment_prefixes=(";",))
    ini.read(root / "platformio.ini")
    return root / ini.get("platformio", "build_dir", fallback=".pio/build")
