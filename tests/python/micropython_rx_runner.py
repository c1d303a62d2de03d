"""Runs under MicroPython (unix port), not CPython: feeds the firmware's receive path the hex-encoded
chunks on stdin, a control tick after each, and prints everything the rig sent as hex, one line per
chunk (test_micropython_robustness.py checks it). A Python exception here is a firmware crash; so is a
heater output above its limit right after a command (as the C fuzz harness checks after each one), not
only at the next control step."""

import sys
from binascii import hexlify, unhexlify

from thermrig_fw.rig import Rig, Samples

rig = Rig(b"unix-sim")
s = Samples()
for raw in s.tc_raw:
    raw[:] = b"\x01\x60\x16\x00"  # 22.00 C
s.tach[0] = s.tach[1] = 5
now_ms = 0
for line in sys.stdin:
    data = unhexlify(line.strip())
    rig.rx(data, len(data), now_ms * 1000)
    if rig.heater_pm > rig.heat_limit_pm:
        raise SystemExit(f"heater {rig.heater_pm} above its limit {rig.heat_limit_pm} after {data!r}")
    now_ms += 100
    rig.last_host_ms = now_ms  # the host is alive: only what the bytes ask changes the rig
    rig.step(s, now_ms)
    print(hexlify(bytes(rig.tx.buf[: rig.tx.n])).decode())
    rig.tx.clear()
