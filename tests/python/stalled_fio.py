"""A host that does not schedule fio, as a test makes it: this process's fio processes stopped
(SIGSTOP) for a while mid-run from a live-sample callback, then let go on (SIGCONT)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from thermrig.fio.runner import LiveSample


def fio_processes() -> list[int]:
    """fio's processes under this one (fio runs each job in a process of its own)."""
    parent: dict[int, int] = {}
    fio: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended while read
            continue
        pid = int(stat.parent.name)
        parent[pid] = int(text[text.rindex(")") + 2 :].split()[1])
        if text[text.index("(") + 1 : text.rindex(")")] == "fio":
            fio.append(pid)

    def mine(pid: int) -> bool:
        while pid > 1:
            pid = parent.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return [pid for pid in fio if mine(pid)]


def stall_once(seconds: float, stopped: list[int]) -> Callable[[LiveSample], None]:
    """An on_live callback: at fio's first second of writing, its processes (listed into `stopped`) are
    stopped for `seconds` (the stall's length, not a wait for an event), then let go on."""

    def on_live(live: LiveSample) -> None:
        if live.write_bps > 0 and not stopped:
            stopped.extend(fio_processes())
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(seconds)
            finally:
                for pid in stopped:
                    os.kill(pid, signal.SIGCONT)

    return on_live
