"""Where the host installs its signal handlers. SIGTERM stops a testbed as Ctrl-C does (one path to the
safe state): while a testbed is open in the main thread, SIGTERM raises Terminated there, a
KeyboardInterrupt. While the rig is being made safe, both signals wait: a second Ctrl-C cannot cut the
SAFE command short; the stop they ask for follows it. A loop that ends on an event (a simulation
serving, a lab campaign) has the signals set it instead."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM: the testbed stopped as on Ctrl-C; the rig is safe."""


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises Terminated for the length of the block (main thread only: elsewhere, as it was)."""
    if not _in_main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM noted, not acted on, for the length of the block; then the first of them is
    raised (KeyboardInterrupt, Terminated), through its own handler or, where its disposition was the
    default, as that exception. An ignored signal stays ignored."""
    if not _in_main_thread():
        yield
        return
    got: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    before = {s: signal.getsignal(s) for s in held}
    for s in held:
        if before[s] not in (signal.SIG_IGN, None):
            signal.signal(s, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        for s in held:
            if before[s] is not None:
                signal.signal(s, before[s])
    if got:
        first = got[0]
        handler = before[first]
        if callable(handler):
            handler(first, None)
        elif handler == signal.SIG_DFL:  # the default would have ended the process: end the block instead
            raise Terminated if first == signal.SIGTERM else KeyboardInterrupt


@contextlib.contextmanager
def signals_stop(stop: threading.Event, signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Each of signums sets stop for the length of the block, instead of raising: whatever waits on stop
    (a simulation serving, a lab campaign) ends its own orderly way, whenever the signal arrives (main
    thread only: elsewhere, as it was)."""
    if not _in_main_thread():
        yield
        return
    before = {s: signal.signal(s, lambda signum, frame: stop.set()) for s in signums}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
