"""The MicroPython firmware's receive path under random input, as `make fuzz` does for the C core: seeded
random bytes, broken frames and well-formed commands with random arguments (correct CRCs, so they reach
the command handlers), chunked arbitrarily. The firmware must never raise, every byte it sends must be
a valid frame, and its outputs must keep the limits the host cannot override."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

from thermrig.protocol.frame import LineAssembler, decode, encode
from thermrig.sim.firmware.micropython import firmware_dir, micropython_binary

RUNNER = Path(__file__).with_name("micropython_rx_runner.py")
KEYS = ["air", "heat", "hlim", "fan0", "fan1", "rpm0", "rpm1", "rate", "proto", "x", ""]
TYPES = ["SET", "SET", "SET", "HELLO", "CLEAR", "PING", "SAFE", "NOPE"]


def random_value(rng: random.Random) -> str:
    return rng.choice(
        [str(rng.randint(-5, 2)), str(rng.randint(0, 70000)), str(rng.randint(-(10**12), 10**12)), "", "1x", "-"]
    )


def random_input(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.1:  # heating, so the limits are tested while the PID is in charge
        hlim = rng.randint(0, 1000)
        return encode(rng.randint(0, 65535), "SET", [f"air={rng.randint(2300, 6500)}", "heat=1", f"hlim={hlim}"])
    if kind < 0.6:  # a well-formed command, arguments anything
        args = [
            f"{rng.choice(KEYS)}={random_value(rng)}" if rng.random() < 0.9 else rng.choice(KEYS) or "k"
            for _ in range(rng.randint(0, 6))
        ]
        try:
            frame = encode(rng.randint(0, 65535), rng.choice(TYPES), args)
        except ValueError:
            frame = b"0 PING*C9CF\n"
        if rng.random() < 0.1:
            frame += frame  # a resend
        return frame
    if kind < 0.8:  # bytes of any value, lines of any length
        return bytes(rng.randrange(256) for _ in range(rng.choice([1, 10, 100, 300]))) + b"\n"
    good = bytearray(encode(rng.randint(0, 99), "SET", [f"air={rng.randint(0, 6500)}"]))
    good[rng.randrange(len(good) - 1)] = rng.randrange(256)  # one byte damaged
    return bytes(good)


def test_random_input_never_breaks_the_firmware() -> None:
    rng = random.Random(20261122)
    stream = b"".join(random_input(rng) for _ in range(3000))
    chunks, i = [], 0
    while i < len(stream):
        n = rng.choice([1, 7, 64, 255, 600])
        chunks.append(stream[i : i + n])
        i += n
    proc = subprocess.run(
        [str(micropython_binary()), str(RUNNER)],
        input="".join(c.hex() + "\n" for c in chunks),
        capture_output=True,
        text=True,
        timeout=300,
        env={"MICROPYPATH": f"{firmware_dir()}:.frozen"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    sent = b"".join(bytes.fromhex(line) for line in proc.stdout.splitlines())
    lines = LineAssembler().feed(sent)
    frames = [decode(line) for line in lines if isinstance(line, bytes)]
    assert len(frames) == len(lines)  # every byte sent belongs to a valid frame
    replies = [f for f in frames if f.type in ("ACK", "NAK")]
    assert len(replies) > 2000 and {f.type for f in replies} == {"ACK", "NAK"}
    reasons = {f.args[1] for f in replies if f.type == "NAK"}
    assert {"ARG", "RANGE", "UNKNOWN", "SYNTAX", "CRC", "LONG"} <= reasons
    tel = [dict(a.split("=", 1) for a in f.args) for f in frames if f.type == "TEL"]
    assert len(tel) >= 100
    for t in tel:
        heat, hlim, flt = int(t["heat"]), int(t["hlim"]), int(t["flt"], 16)
        assert 0 <= heat <= hlim <= 1000
        assert flt == 0 or heat == 0  # a latched fault means the heater is off
        assert 0 <= int(t["air"]) <= 6500 and 0 <= int(t["fan0"]) <= 1000 and 0 <= int(t["fan1"]) <= 1000
    assert any(int(t["heat"]) > 0 for t in tel)  # the random commands did heat at times
