"""A board's flasher: how to build its firmware, upload it, and which port the rig answers on after."""

from __future__ import annotations

import re
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path

from thermrig.errors import ThermrigError
from thermrig.firmware_identity import checkout_version


class FlashError(ThermrigError, RuntimeError):
    """Flashing failed; the message says what and what to do."""


class Flasher(ABC):
    board: str

    @abstractmethod
    def resolve_port(self, port: str | None) -> str:
        """The serial port the rig will answer on after flashing (raises FlashError when there is none)."""

    @abstractmethod
    def steps(self, port: str) -> list[str]:
        """What build and upload will run, for --dry-run."""

    @abstractmethod
    def build(self) -> str:
        """Build the image; return the version it was stamped with."""

    @abstractmethod
    def upload(self, port: str) -> None:
        """Put the built image on the board."""


def run_tool(cmd: list[str], what: str, cwd: Path) -> None:
    """Run a build or upload tool; its failure is one line naming the command and its last words."""
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError as exc:
        raise FlashError(f"{what}: {cmd[0]} is not installed") from exc
    if done.returncode != 0:
        last = next((ln.strip() for ln in reversed((done.stdout + done.stderr).splitlines()) if ln.strip()), "")
        raise FlashError(f"{what} failed: `{' '.join(cmd)}` exited with status {done.returncode}: {last}")


# The core's HELLO reply keeps firmware name and version as one string literal (rig_cmd.c).
_IMAGE_STAMP = re.compile(rb" fw=[\w.-]+ ver=([\w.+-]+)")


def image_version(image: Path) -> str | None:
    """The version a firmware image carries (what its HELLO will say), or None for an image without one
    (not a thermrig build, or a hex file). Read from the image itself: a build's stamp header can be newer
    than the objects (PlatformIO does not recompile for a changed force-included header)."""
    if not image.is_file():
        return None
    m = _IMAGE_STAMP.search(image.read_bytes())
    return m.group(1).decode() if m else None


def built_version(image: Path) -> str:
    """The version an image carries, or this checkout's for an image that carries none."""
    return image_version(image) or checkout_version()
