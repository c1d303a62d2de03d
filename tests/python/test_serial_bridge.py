"""SerialBridge: bytes relayed both ways between a pty and a firmware's serial stream, and the serial
faults it plays (garbage, a dead line for some plant time, unplug and replug under the same link)."""

from __future__ import annotations

import os
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from thermrig.sim.serial_bridge import SerialBridge


class Clock:
    """Plant time in microseconds, as the bridge reads it."""

    def __init__(self) -> None:
        self.t_us = 0

    def __call__(self) -> int:
        return self.t_us


def read_some(fd: int, want: int, timeout: float = 5.0) -> bytes:
    got = b""
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.05)[0]:
            got += os.read(fd, 4096)
    return got


@pytest.fixture
def wired(tmp_path: Path) -> Iterator[tuple[SerialBridge, socket.socket, Clock]]:
    clock = Clock()
    bridge = SerialBridge(tmp_path / "tty", tmp_path / "serial.sock", clock, realtime=False)
    firmware = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    firmware.connect(str(bridge.sock_path))
    bridge.accept(5)
    yield bridge, firmware, clock
    firmware.close()
    bridge.close()


def open_port(bridge: SerialBridge) -> int:
    fd = os.open(bridge.link, os.O_RDWR | os.O_NOCTTY)
    os.set_blocking(fd, False)
    return fd


def test_bytes_cross_both_ways(wired: tuple[SerialBridge, socket.socket, Clock]) -> None:
    bridge, firmware, _ = wired
    port = open_port(bridge)
    firmware.sendall(b"1 EVT BOOT*ABCD\n")
    bridge.settle()
    assert read_some(port, 16) == b"1 EVT BOOT*ABCD\n"
    os.write(port, b"7 PING*1234\n")
    firmware.settimeout(5)
    assert firmware.recv(64) == b"7 PING*1234\n"
    os.close(port)


def test_garbage_silence_and_unplug(wired: tuple[SerialBridge, socket.socket, Clock]) -> None:
    bridge, firmware, clock = wired
    port = open_port(bridge)
    bridge.fault("G H 00FF0A")
    assert read_some(port, 3) == b"\x00\xff\n"
    bridge.fault("G R 414243")
    firmware.settimeout(5)
    assert firmware.recv(8) == b"ABC"

    bridge.fault("Q 1000")  # dead both ways for 1 s of plant time
    firmware.sendall(b"lost\n")
    bridge.settle()
    os.write(port, b"also lost\n")
    assert read_some(port, 1, timeout=0.3) == b""
    clock.t_us = 1_000_000
    firmware.sendall(b"back\n")
    bridge.settle()
    assert read_some(port, 5) == b"back\n"
    firmware.settimeout(0.3)
    with pytest.raises(TimeoutError):
        firmware.recv(64)  # what the host wrote into the dead line never arrived

    bridge.fault("U 2000")  # at plant time 1 s: back with the sample of plant time 3 s
    assert not bridge.link.exists()
    bridge.on_sample(2_900_000)
    assert not bridge.link.exists()
    bridge.on_sample(3_000_000)  # exactly on time: before the firmware handles this sample
    assert bridge.link.exists()  # a new pty (its name may be the old one, free again)
    os.close(port)
    port = open_port(bridge)
    firmware.sendall(b"replugged\n")
    bridge.settle()
    assert read_some(port, 10) == b"replugged\n"
    os.close(port)
