"""Child processes: waiting for what they announce instead of sleeping, giving one that Ctrl-C must
reach SIGINT's default disposition, and stopping one."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether predicate became true within timeout seconds (polled every 10 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def with_default_sigint(cmd: Sequence[str]) -> list[str]:
    """A child that Ctrl-C must reach gets SIGINT's default disposition explicitly: started from the
    background of a non-interactive shell it inherits SIGINT ignored, and Python keeps an ignored SIGINT
    ignored. Through `env --default-signal=INT`, which sets it and execs the command (the same pid), not a
    preexec_fn: a preexec_fn makes subprocess fork() instead of vfork() and run Python in the child before
    exec, which is not safe where gRPC's threads run (the lab's client loads it)."""
    return ["env", "--default-signal=INT", *cmd]


def stop_child(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop a child that still runs: SIGTERM, then SIGKILL when it has not exited within grace_s seconds;
    reaped either way."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
