"""`thermrig flash`: build the firmware for a board (or take a release's image), upload it, and check the
rig reports that version. One flasher per kind of board (its own module); a new board adds a line to
BOARDS (and to IMAGE_BOARDS when it can be flashed from a release file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from thermrig.flash.flasher import Flasher, FlashError
from thermrig.flash.openocd import OPENOCD_TARGETS, OpenOcdFlasher
from thermrig.flash.pico import PicoFlasher
from thermrig.flash.platformio import PlatformIOFlasher
from thermrig.flash.qemu import QemuFlasher

BOARDS: dict[str, Callable[[], Flasher]] = {
    "nucleo_f411re": lambda: PlatformIOFlasher("nucleo_f411re"),
    "nucleo_f446re": lambda: PlatformIOFlasher("nucleo_f446re"),
    "qemu": QemuFlasher,
    "pico": PicoFlasher,
}


IMAGE_BOARDS: dict[str, Callable[[Path, str], Flasher]] = {
    **{board: (lambda image, version, b=board: OpenOcdFlasher(b, image, version)) for board in OPENOCD_TARGETS},
    "pico": lambda image, version: PicoFlasher(image, version),
}


def flasher(board: str) -> Flasher:
    if board not in BOARDS:
        raise FlashError(f"unknown board {board!r}; choose one of {', '.join(BOARDS)}")
    return BOARDS[board]()


def image_flasher(board: str, image: Path, version: str) -> Flasher:
    """The flasher that uploads a given image (a release's) as it is and expects `version` in HELLO."""
    if board not in IMAGE_BOARDS:
        raise FlashError(f"board {board!r} is not flashed from an image; choose one of {', '.join(IMAGE_BOARDS)}")
    return IMAGE_BOARDS[board](image, version)
