"""thermrig.testbed.signals.signals_held: Ctrl-C and SIGTERM wait while the rig is made safe, then act.
A child process sends itself the signal inside the block, with the disposition it had before set
explicitly (Python's own SIGINT handler, the default, or ignored); the block must finish first, and then
the signal must end it as that disposition asks, never be dropped."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHILD = """
import os, signal, sys
from thermrig.testbed.signals import signals_held

sig = getattr(signal, sys.argv[1])
disposition = sys.argv[2]
if disposition == "python":
    signal.signal(sig, signal.default_int_handler)
elif disposition == "default":
    signal.signal(sig, signal.SIG_DFL)
elif disposition == "ignored":
    signal.signal(sig, signal.SIG_IGN)
try:
    with signals_held():
        os.kill(os.getpid(), sig)
        for _ in range(1000):  # the handler runs between bytecodes: give it many
            pass
        print("block finished", flush=True)
except KeyboardInterrupt as e:
    print("raised", type(e).__name__, flush=True)
    sys.exit(3)
print("went on", flush=True)
"""


@pytest.mark.parametrize(
    ("sig", "disposition", "after"),
    [
        ("SIGINT", "python", "raised KeyboardInterrupt"),
        ("SIGINT", "default", "raised KeyboardInterrupt"),
        ("SIGTERM", "default", "raised Terminated"),
        ("SIGINT", "ignored", "went on"),
        ("SIGTERM", "ignored", "went on"),
    ],
)
def test_a_signal_inside_the_block_acts_after_it_as_its_disposition_says(
    sig: str, disposition: str, after: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, sig, disposition], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.stdout.splitlines() == ["block finished", after], proc.stdout + proc.stderr
    assert proc.returncode == (3 if after.startswith("raised") else 0), proc.stderr
