"""The Zephyr boards `make firmware` builds and where their images are (shared by the firmware tests)."""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ZEPHYR_BUILD = REPO / "build" / "zephyr"
TOOLCHAINS = REPO / "build" / "toolchains" / "zephyr-3.5.0"


def firmware_boards() -> list[str]:
    """The boards of the Makefile's ZEPHYR_BOARDS (`:=` and any `+=` lines), in order."""
    boards: list[str] = []
    for line in (REPO / "Makefile").read_text().splitlines():
        m = re.match(r"ZEPHYR_BOARDS\s*(:?=|\+=)\s*(.*)", line)
        if m:
            boards = (boards if m.group(1) == "+=" else []) + m.group(2).split()
    return boards


def archives_dir() -> Path:
    """Where the pinned archives are (as scripts/setup_toolchains.sh looks for them)."""
    return Path(os.environ.get("THERMRIG_TOOLCHAINS", REPO.parent / "shared" / "toolchains"))


def board_build(board: str) -> Path:
    """A board's build folder; fails the test with what to run when `make firmware` has not built it."""
    out = ZEPHYR_BUILD / board
    if not (out / "zephyr" / "zephyr.elf").exists():
        raise AssertionError(f"{out}/zephyr/zephyr.elf is missing: run `make firmware` (make test does)")
    return out
