"""Runs under MicroPython (unix port), not CPython: the firmware's codec on hex-encoded vector inputs.

Each stdin line is `op HEX`; each stdout line is the hex of the codec's result (test_micropython_codec.py
turns the shared vectors into these lines and compares the results byte for byte)."""

import sys
from binascii import hexlify, unhexlify

from thermrig_fw import frame


def describe(buf, n):
    f = frame.Frame()
    err = frame.decode(buf, n, f)
    if err != frame.OK:
        return b"ERR " + frame.ERR_NAMES[err]
    return b" ".join([b"OK"] + [f.token(k) for k in range(f.ntok)])


def run(op, data):
    if op == "crc":
        return b"%04X" % frame.crc16(data, 0, len(data))
    if op == "encode":
        seq, type_, *args = data.split(b" ")
        tx = frame.TxBuffer()
        tx.begin(int(seq), type_)
        for a in args:
            tx.ch(0x20)
            tx.s(a)
        tx.end()
        return bytes(tx.buf[: tx.n])
    if op == "decode":
        return describe(bytearray(data), len(data))
    lines = frame.LineBuffer()
    out = []
    for b in data:
        st = lines.push(b)
        if st == frame.LINE_LONG:
            out.append(b"ERR LONG")
        elif st == frame.LINE_READY:
            if lines.n:
                out.append(describe(lines.buf, lines.n))
            lines.reset()
    return b"|".join(out) or b"-"


for line in sys.stdin:
    op, _, hexdata = line.strip().partition(" ")
    print(hexlify(run(op, unhexlify(hexdata))).decode() or "-")
