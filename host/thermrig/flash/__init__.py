"""`thermrig flash`: build the firmware for a board, upload it, and check the rig reports that version.
One flasher per kind of board (its own module); a new board adds a line to BOARDS."""

from __future__ import annotations

from collections.abc import Callable

from thermrig.flash.base import Flasher, FlashError
from thermrig.flash.pico import PicoFlasher
from thermrig.flash.platformio import PlatformIOFlasher
from thermrig.flash.qemu import QemuFlasher

BOARDS: dict[str, Callable[[], Flasher]] = {
    "nucleo_f411re": lambda: PlatformIOFlasher("nucleo_f411re"),
    "nucleo_f446re": lambda: PlatformIOFlasher("nucleo_f446re"),
    "qemu": QemuFlasher,
    "pico": PicoFlasher,
}


def flasher(board: str) -> Flasher:
    if board not in BOARDS:
        raise FlashError(f"unknown board {board!r}; choose one of {', '.join(BOARDS)}")
    return BOARDS[board]()
