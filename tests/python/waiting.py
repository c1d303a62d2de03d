"""Waiting for what a test means instead of sleeping: a condition polled until it holds or time runs out."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether predicate became true within timeout seconds (polled every 10 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False
