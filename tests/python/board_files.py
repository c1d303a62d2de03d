"""A copy of the Pico's board files (the firmware folder without the simulated RP2040) with one edit made
to it, as a person wiring or configuring a board might get one line wrong: the Pico tests' miswirings."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from thermrig.firmware_identity import micropython_firmware_dir


def board_files(tmp_path: Path, edit: Callable[[Path], None]) -> Path:
    """The board's files in tmp_path/board, edited."""
    image = tmp_path / "board"
    shutil.copytree(micropython_firmware_dir(), image, ignore=shutil.ignore_patterns("__pycache__", "sim_machine"))
    edit(image)
    return image


def replace_in(rel: str, old: str, new: str) -> Callable[[Path], None]:
    """The edit that replaces old by new in the board file rel (old must be there)."""

    def edit(image: Path) -> None:
        path = image / rel
        text = path.read_text()
        assert old in text, f"{old!r} is not in {rel}"
        path.write_text(text.replace(old, new))

    return edit
