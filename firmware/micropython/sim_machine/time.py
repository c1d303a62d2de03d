# `time` for the simulated Pico: ticks_ms / ticks_us from the board's tick counter (rp2040.py), which
# follows the plant's time when the plant paces the ticks, and wrap as an RP2040's do (every 2**30).
# asyncio imports its ticks from here too, so the firmware's sleeps run on the board's clock. The rest is
# the unix port's own `time` (MicroPython's way of extending a built-in module).
import sys

_path = sys.path
sys.path = ()
try:
    from time import *  # noqa: F403
finally:
    sys.path = _path
    del _path

import rp2040  # noqa: E402

_MASK = rp2040.TICKS_PERIOD - 1
_HALF = rp2040.TICKS_PERIOD // 2


def ticks_us():
    return rp2040.board.now_us() & _MASK


def ticks_ms():
    return (rp2040.board.now_us() // 1000) & _MASK


def ticks_add(ticks, delta):
    return (ticks + delta) & _MASK


def ticks_diff(a, b):
    return ((a - b + _HALF) & _MASK) - _HALF
