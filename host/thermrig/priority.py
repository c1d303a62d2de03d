"""The simulated world's priority on a busy host. The plant, the virtual drive (nbdkit), the firmwares and
fio on the virtual drive stand for hardware with clocks of its own: a real drive's controller is not slowed
down by the test PC's browser, and a real fio runs against a drive that is not. Where this process may
raise priority (root, CAP_SYS_NICE, or an RLIMIT_NICE that allows it), what keeps the world's real time
runs at niceness WORLD_NICE, ahead of the host's other work: the virtual drive and fio on it always, the
plant and what it paces while it keeps real time (sim/server.py); elsewhere it runs as the host started
it, and the record's lateness (sim_plant_late_ms, sim_drive_late_ms) says what that cost.

Niceness is a thread's on Linux: a thread sets its own (set_thread_nice), a child process started from a
thread starts at that thread's, and a command is started raised through coreutils' `nice`, which sets it
and execs the command (the same pid; every thread the command starts inherits it), not a preexec_fn
(see children.with_default_sigint). $THERMRIG_WORLD_NICE sets another niceness (-20 to 19); one no
lower than the thread's own leaves the world as it was started."""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Sequence
from pathlib import Path

from thermrig.errors import ThermrigError
from thermrig.settings import environment

WORLD_NICE = -10  # each step of niceness weighs about 1.25 times the next: -10 gets about 9.3 times nice 0's CPU share
CAP_SYS_NICE = 23  # the capability's bit in /proc/self/status's CapEff


class PriorityError(ThermrigError, ValueError):
    """$THERMRIG_WORLD_NICE is not a niceness."""


def thread_nice() -> int:
    """The calling thread's niceness (Linux: PRIO_PROCESS with 0 is the calling thread)."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def _wanted() -> int:
    text = environment("THERMRIG_WORLD_NICE")
    if text is None:
        return WORLD_NICE
    try:
        nice = int(text)
    except ValueError:
        raise PriorityError(f"THERMRIG_WORLD_NICE={text!r} is not a niceness (an integer, -20 to 19)") from None
    if not -20 <= nice <= 19:
        raise PriorityError(f"THERMRIG_WORLD_NICE={nice} is outside -20 to 19")
    return nice


def _may_raise_to() -> int:
    """The lowest niceness this process may give itself: -20 with CAP_SYS_NICE, else RLIMIT_NICE's."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:") and int(line.split()[1], 16) >> CAP_SYS_NICE & 1:
            return -20
    soft, _ = resource.getrlimit(resource.RLIMIT_NICE)
    if soft == resource.RLIM_INFINITY:
        return -20
    return max(-20, 20 - soft)  # RLIMIT_NICE's ceiling is 20 - rlim_cur


def world_nice() -> int:
    """The niceness the world's threads and processes get when started from the calling thread: the one
    wanted (WORLD_NICE or $THERMRIG_WORLD_NICE) as far as the host allows, never a lower priority than
    the calling thread's own."""
    now = thread_nice()
    return min(now, max(_wanted(), _may_raise_to()))


def in_world(cmd: Sequence[str]) -> list[str]:
    """The command, started at the world's niceness (unchanged where the host allows no raise)."""
    step = world_nice() - thread_nice()
    return ["nice", "-n", str(step), *cmd] if step else list(cmd)


def set_thread_nice(nice: int, tid: int = 0) -> None:
    """Give a thread (tid; 0: the calling one) this niceness; raising past what the host allows, or a
    thread that has ended, is left as it was."""
    with contextlib.suppress(PermissionError, ProcessLookupError):
        os.setpriority(os.PRIO_PROCESS, tid, nice)


def set_process_nice(nice: int, pid: int) -> None:
    """Give every thread of a process this niceness (the threads it starts later take their starter's)."""
    with contextlib.suppress(FileNotFoundError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            set_thread_nice(nice, int(tid))


def describe() -> str:
    """One line for the user: the priority the world runs at here, and why."""
    nice, now = world_nice(), thread_nice()
    if nice < now:
        return f"the simulated world runs at niceness {nice}, ahead of this machine's other work"
    why = "as THERMRIG_WORLD_NICE asks" if _wanted() >= now else "the host allows no raise: no CAP_SYS_NICE"
    return (
        f"the simulated world runs at this machine's priority ({why}): on a busy machine its results can move"
        " with the load, and the record's lateness says by how much"
    )
