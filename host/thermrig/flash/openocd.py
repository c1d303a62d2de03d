"""A Nucleo flashed from an image with OpenOCD over its on-board ST-LINK (what PlatformIO's
`upload_protocol = stlink` runs): no build, no PlatformIO, only the uploader."""

from __future__ import annotations

from pathlib import Path

from thermrig.config import ConfigError, resolve_port
from thermrig.flash.flasher import Flasher, FlashError, run_tool
from thermrig.settings import find_tool

OPENOCD_TARGETS = {"nucleo_f411re": "target/stm32f4x.cfg", "nucleo_f446re": "target/stm32f4x.cfg"}


def openocd_command(board: str, image: str, tool: str = "openocd") -> list[str]:
    """Program an ELF image (named as the machine that runs it sees it), verify it, reset the board."""
    program = f"program {image} verify reset exit"
    return [tool, "-f", "interface/stlink.cfg", "-f", OPENOCD_TARGETS[board], "-c", program]


class OpenOcdFlasher(Flasher):
    def __init__(self, board: str, image: Path, version: str) -> None:
        if board not in OPENOCD_TARGETS:
            raise FlashError(f"an image for {board} is not flashed with OpenOCD (boards: {', '.join(OPENOCD_TARGETS)})")
        self.board, self.image, self.version = board, image, version

    def resolve_port(self, port: str | None) -> str:
        try:
            return resolve_port(port).port
        except ConfigError as exc:
            raise FlashError(f"no port for the {self.board} after flashing: pass --port (e.g. /dev/ttyACM0)") from exc

    def _command(self) -> list[str]:
        return openocd_command(self.board, self.image.name, str(find_tool("openocd")))

    def steps(self, port: str) -> list[str]:
        return [
            f"image: {self.image} ({self.version})",
            f"upload: {' '.join(self._command())}  (in {self.image.parent})",
        ]

    def build(self) -> str:
        return self.version  # nothing to build: the image's version, from its manifest or its stamp

    def upload(self, port: str) -> None:
        if not find_tool("openocd").exists():
            raise FlashError("upload: openocd is not installed (`apt-get install openocd`)")
        run_tool(self._command(), "upload", self.image.parent)
