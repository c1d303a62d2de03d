"""Stopping a child process (thermrig.children.stop_child): one that ends on SIGTERM ends so, one that
ignores it is killed after the grace, one already gone is left as it is; each is reaped."""

from __future__ import annotations

import signal
import subprocess
import sys

from thermrig.children import stop_child


def _child(code: str) -> subprocess.Popen[str]:
    """A Python child that prints "ready" once it has done what code sets up."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code + "\nprint('ready', flush=True)\nimport time\nwhile True: time.sleep(1)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_a_child_that_ends_on_sigterm_is_terminated_and_reaped() -> None:
    proc = _child("")
    stop_child(proc, grace_s=60.0)
    assert proc.returncode == -signal.SIGTERM


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    proc = _child("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)")
    stop_child(proc, grace_s=0.2)
    assert proc.returncode == -signal.SIGKILL


def test_a_child_already_gone_is_left_as_it_is() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait()
    stop_child(proc)
    assert proc.returncode == 3
