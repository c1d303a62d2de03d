"""For tests that run `thermrig sim` as a process."""

from __future__ import annotations

import subprocess
from pathlib import Path


def served_port(proc: subprocess.Popen[str]) -> str:
    """The port a starting `thermrig sim` prints: three lines of explanation (the rig, the world's priority,
    what to try; a narrow terminal wraps them), then the port alone on its line (a symlink to a pty)."""
    assert proc.stdout is not None
    for _ in range(8):
        line = proc.stdout.readline().strip()
        if line.startswith("/") and " " not in line:
            assert Path(line).resolve().as_posix().startswith("/dev/pts/")
            return line
    raise AssertionError("thermrig sim printed no port")
