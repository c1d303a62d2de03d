"""VirtualDrive: the drive model served to the real fio over loopback TCP (fio's `net` ioengine).

Writes: fio connects to `port` and sends; the drive reads no faster than its current state allows, so
TCP back-pressure holds fio to the drive's pace. Reads: fio listens (`listen=1`, the only way its net
engine reads) and the drive connects and sends, paced the same way. The budget of bytes is refilled
once per plant tick from the model's throughput cap, so the pace follows plant time: at 1x real time
fio's logs show the throttle with true timing. `scale` shrinks bandwidth only (wire bytes per drive
byte), for machines that cannot move GB/s through Python; times and ratios are unaffected."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable

from thermrig.plant.drive_model import DriveModel, Pattern
from thermrig.plant.drive_profiles import DriveProfile
from thermrig.plant.model import Plant
from thermrig.plant.wires import TICK_S

CHUNK = 64 * 1024  # bytes per socket call
SOCKET_BUFFER = 64 * 1024  # small kernel buffers: little data in flight beyond the drive's pace


class VirtualDrive:
    def __init__(self, profile: DriveProfile, scale: float = 0.1, host: str = "127.0.0.1") -> None:
        if not 0 < scale <= 1:
            raise ValueError(f"bandwidth scale {scale} must be in (0, 1]")
        self.model = DriveModel(profile)
        self.scale = scale
        self.host = host
        self.cpu_s = 0.0  # CPU time of the threads that moved bytes, summed as they finish
        self._cond = threading.Condition()
        self._budget = 0.0  # wire bytes the drive may still move this tick
        self._moved = 0  # wire bytes moved since the last tick
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
        self._listener.bind((host, 0))
        self._listener.listen(4)
        self.port: int = self._listener.getsockname()[1]
        self._spawn(self._accept_loop, "vdrive-accept")

    # --- the plant side ------------------------------------------------------------------------------

    def on_tick(self, plant: Plant) -> None:
        """PlantServer hook, once per tick before the plant steps: account the bytes moved, let the model
        re-evaluate its throttle, set the drive's power, and grant the next tick's bytes."""
        with self._cond:
            moved, self._moved = self._moved, 0
        s = plant.state
        plant.drive_power_w = self.model.tick(TICK_S, s.ctrl, s.board, moved / self.scale)
        per_tick = self.model.cap_rate() * self.scale * TICK_S
        with self._cond:
            self._budget = min(self._budget + per_tick, 2 * per_tick)
            self._cond.notify_all()

    # --- the host side -------------------------------------------------------------------------------

    def announce(self, pattern: Pattern, read_port: int | None = None) -> None:
        """The job fio is about to run. For reads, the port fio listens on: the drive connects to it."""
        self.model.pattern = pattern
        if not pattern.write:
            if read_port is None:
                raise ValueError("a read job needs the port fio listens on")
            self._spawn(lambda: self._send_to(read_port), "vdrive-read")

    def idle(self) -> None:
        self.model.pattern = None

    def _take(self, want: int) -> int:
        with self._cond:
            while self._budget < 1 and not self._closed:
                self._cond.wait(0.5)
            if self._closed:
                return 0
            grant = int(min(want, self._budget))
            self._budget -= grant
            return grant

    def _done(self, granted: int, moved: int) -> None:
        with self._cond:
            self._budget += granted - moved
            self._moved += moved

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if self.model.pattern is None or not self.model.pattern.write:  # fio wrote without an announcement
                self.model.pattern = Pattern(write=True, random=False, bs=128 * 1024)
            self._conns.append(conn)
            self._spawn(lambda c=conn: self._receive(c), "vdrive-write")

    def _paced(self, conn: socket.socket, move: Callable[[int], int]) -> None:
        """Move at most the granted bytes per call (move returns how many it moved; 0: the peer closed)
        until the drive or the connection closes."""
        with contextlib.suppress(OSError):
            while not self._closed:
                grant = self._take(CHUNK)
                if grant == 0:
                    break
                moved = move(grant)
                self._done(grant, moved)
                if moved == 0:
                    break
        conn.close()

    def _receive(self, conn: socket.socket) -> None:
        buf = memoryview(bytearray(CHUNK))
        self._paced(conn, lambda n: conn.recv_into(buf[:n]))

    def _send_to(self, port: int) -> None:
        deadline = time.monotonic() + 30.0
        conn = None
        while conn is None and not self._closed and time.monotonic() < deadline:
            try:
                conn = socket.create_connection((self.host, port), timeout=1.0)
            except OSError:
                time.sleep(0.05)  # fio is not listening yet
        if conn is None:
            return
        conn.settimeout(None)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conns.append(conn)
        data = memoryview(bytes(CHUNK))
        self._paced(conn, lambda n: conn.send(data[:n]))

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        def run() -> None:
            try:
                target()
            finally:
                with self._cond:
                    self.cpu_s += time.thread_time()

        thread = threading.Thread(target=run, name=name, daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for s in [self._listener, *self._conns]:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in self._threads:
            t.join(timeout=2)
