"""The Pico's own code (main.py, bootcheck.py, thermrig_fw/hal_pico.py) run on MicroPython's unix port,
with `machine` (the board's pins, buses and watchdog: true hardware) played by tests/python/fake_pico,
which records what the firmware does to the pins. Serial is stdin/stdout, as USB CDC is on the Pico."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from interruptible import with_default_sigint

from thermrig.protocol.frame import Frame, decode, encode
from thermrig.sim.firmware.micropython import firmware_dir, micropython_binary

FAKE_PICO = Path(__file__).with_name("fake_pico")


class Board:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.seq = 0
        self._buf = b""

    def send(self, type_: str, *args: str) -> None:
        assert self.proc.stdin is not None
        self.seq += 1
        self.proc.stdin.write(encode(self.seq, type_, list(args)))
        self.proc.stdin.flush()

    def frame(self, timeout: float = 30.0) -> Frame:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self.proc.stdout], [], [], left)[0], "no frame from the board"
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:  # the board's stdout closed: it exited, and what it said is on stderr
                raise AssertionError(f"the board exited ({self.proc.wait()}): {self.said()}")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return decode(line)

    def said(self) -> str:
        """The board's stderr after it exited: pin events, and a traceback if it crashed."""
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def until(self, type_: str, first_arg: str | None = None) -> Frame:
        for _ in range(200):
            f = self.frame()
            if f.type == type_ and (first_arg is None or f.args[0] == first_arg):
                return f
        raise AssertionError(f"no {type_} {first_arg or ''} from the board")


@contextmanager
def pico(*argv: str) -> Iterator[Board]:
    env = {**os.environ, "MICROPYPATH": f"{FAKE_PICO}:.frozen"}
    # SIGINT's default disposition without a preexec_fn (interruptible.py: the board aborted so once).
    cmd = with_default_sigint([str(micropython_binary()), str(firmware_dir() / "main.py"), *argv])
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(cmd, **pipes, env=env) as proc:
        try:
            yield Board(proc)
        finally:
            proc.kill()


def pin_events(proc: subprocess.Popen[bytes]) -> list[list[str]]:
    assert proc.stderr is not None
    return [line.split() for line in proc.stderr.read().decode().splitlines()]


def telemetry(f: Frame) -> dict[str, str]:
    return dict(a.split("=", 1) for a in f.args)


def test_boots_safe_then_runs_the_rig_on_the_pico_hal() -> None:
    with pico() as board:
        assert board.until("EVT").args == ("BOOT", "cause=0")
        board.send("HELLO", "proto=1")
        hello = dict(a.split("=", 1) for a in board.until("ACK").args[1:])
        assert (hello["fw"], hello["board"]) == ("thermrig-micropython", "rp2040-pico")
        tel = telemetry(board.until("TEL"))
        assert tel["tc3"] == "2200:00" and tel["amb"].endswith(":20")  # no SHT31 answers: flagged, no fault
        board.send("SET", "air=2300", "heat=1", "fan0=400")
        board.until("ACK", str(board.seq))
        for _ in range(15):  # the tach counts (5 edges a tick) fill the 1 s RPM window
            tel = telemetry(board.until("TEL"))
        rpm, status = tel["rpm0"].split(":")
        # 5 pulses per tick of about 100 ms of real time, 2 pulses a turn: about 1500 RPM.
        assert 1300 <= int(rpm) <= 1700 and status == "00"
        assert tel["flt"] == "0000" and int(tel["heat"]) > 0
        board.proc.kill()
        events = pin_events(board.proc)
    # The safe state comes first, with bare pins, before anything can fail; then the PWMs start safe.
    assert events[:3] == [["pin", "10", "0"], ["pin", "6", "1"], ["pin", "7", "1"]]
    assert events[3:6] == [["pwm", "10", "100", "0"], ["pwm", "6", "25000", "65535"], ["pwm", "7", "25000", "65535"]]
    assert ["wdt", "2000"] in events
    heater = [int(e[2]) for e in events if e[:2] == ["duty", "10"]]
    fan0 = [int(e[2]) for e in events if e[:2] == ["duty", "6"]]
    assert max(heater) > 0 and max(heater) <= 65535
    assert 400 * 65535 // 1000 in fan0


def test_watchdog_reset_boots_latched_and_safe() -> None:
    with pico("--after-watchdog") as board:
        assert board.until("EVT").args == ("BOOT", "cause=1024")
        tel = telemetry(board.until("TEL"))
        assert tel["flt"] == "0400" and tel["heat"] == "0" and tel["fan0"] == "1000"
        board.send("SET", "heat=1")
        nak = board.until("NAK")
        assert nak.args[1:] == ("STATE", "heat")


def test_interrupt_for_the_repl_leaves_outputs_safe_and_the_watchdog_fed() -> None:
    """mpremote (or a person) interrupts the firmware to get the REPL, e.g. to flash it: heater off, fans
    full, and a timer keeps feeding the watchdog, which cannot be stopped, so the REPL stays up."""
    with pico() as board:
        board.send("SET", "air=2300", "heat=1")
        board.until("ACK", str(board.seq))
        for _ in range(5):
            board.until("TEL")
        board.proc.send_signal(signal.SIGINT)  # what Ctrl-C on the USB serial raises on a Pico
        assert board.proc.wait(timeout=10) == 0
        events = pin_events(board.proc)
    assert any(e[:2] == ["duty", "10"] and e[2] != "0" for e in events)  # it was heating
    assert events[-4:] == [["duty", "10", "0"], ["duty", "6", "65535"], ["duty", "7", "65535"], ["timer", "500"]]
