"""A firmware release as `make dist` writes it (scripts/release_files.py), its Zephyr images stand-ins that
carry a version stamp as a real image does; the Pico's files are the real firmware compiled by mpy-cross."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BOARDS = ("nucleo_f411re", "nucleo_f446re")


def stand_in_image(version: str) -> bytes:
    """Bytes that carry the version stamp as the core's HELLO literal does in a Zephyr image."""
    return b"\x7fELF" + os.urandom(1024) + f" fw=thermrig-zephyr ver={version}\0".encode() + os.urandom(512)


def write_release(tmp_path: Path, version: str, name: str = "release") -> Path:
    """scripts/release_files.py run on a Zephyr build folder whose images are stand-ins stamped `version`."""
    build = tmp_path / f"zephyr-{name}"
    for board in BOARDS:
        made = build / board / "zephyr"
        made.mkdir(parents=True)
        (made / "zephyr.elf").write_bytes(stand_in_image(version))
        (made / "zephyr.bin").write_bytes(os.urandom(900))
    out = tmp_path / name
    script = [sys.executable, str(REPO / "scripts" / "release_files.py"), str(out), str(build), *BOARDS]
    done = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out
