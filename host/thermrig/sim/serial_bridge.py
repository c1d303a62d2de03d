"""SerialBridge: the host-facing pty of a firmware that does not write one itself (QEMU, MicroPython).
It owns the pty behind a stable symlink, relays bytes to and from the firmware's serial stream (a
socket the firmware connects to), and plays the serial-line faults that rigsim plays itself: garbage
into the rig or toward the host, a dead line for some plant time, a USB unplug and replug (docs/plant.md)."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import socket
import threading
import tty
from collections.abc import Callable
from pathlib import Path

SLOW_READER_S = 1.0  # paced runs: how long a full pty may block before the bridge drops output


class SerialBridge:
    def __init__(self, link: Path, sock_path: Path, clock: Callable[[], int], realtime: bool) -> None:
        """clock: plant time in microseconds (the last sample's), which times silences and replugs as
        rigsim's do."""
        self.link = link
        self.sock_path = sock_path
        self.clock = clock
        self.realtime = realtime
        self.dropped = 0  # bytes toward the host dropped because nobody read the pty
        self._lock = threading.RLock()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(sock_path))
        self._listener.listen(1)
        self._fw: socket.socket | None = None
        self._master = self._slave = -1
        self._unplugged = False
        self._unread = False  # nobody drained the pty for SLOW_READER_S: drop at once until someone does
        self._silent_until_us = 0
        self._replug_at_us = 0
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        self._open_pty()
        self._thread: threading.Thread | None = None

    def accept(self, timeout: float) -> None:
        """Wait for the firmware to connect its serial stream, then start relaying."""
        self._listener.settimeout(timeout)
        self._fw, _ = self._listener.accept()
        self._fw.setblocking(False)
        self._thread = threading.Thread(target=self._relay, name="serial-bridge", daemon=True)
        self._thread.start()

    @property
    def relay_thread_id(self) -> int | None:
        """The relaying thread's native id, once it relays."""
        return self._thread.native_id if self._thread is not None else None

    def _open_pty(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # kept open so the pty survives clients coming and going
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self._unplugged = False
        tmp = self.link.with_name(self.link.name + ".new")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(os.ttyname(slave))
        tmp.replace(self.link)  # atomic: a reader never sees the link missing except while unplugged

    def _close_pty(self) -> None:
        for fd in (self._master, self._slave):
            if fd >= 0:
                os.close(fd)
        self._master = self._slave = -1
        self._unplugged = True
        self.link.unlink(missing_ok=True)

    def _dead(self) -> bool:
        return self._unplugged or self.clock() < self._silent_until_us

    def _to_host(self, data: bytes) -> None:
        """Bytes from the firmware toward the host: a UART drops what nobody drains."""
        if self._dead():
            return
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._master, view) :]
                self._unread = False
            except BlockingIOError:
                if self.realtime or self._unread:
                    break
                # Paced runs give a slow reader up to a second, as rigsim does.
                _, writable, _ = select.select([], [self._master], [], SLOW_READER_S)
                if not writable:
                    self._unread = True
                    break
            except OSError as exc:  # EIO: the pty's other side is closed by every client; keep going
                if exc.errno != errno.EIO:
                    raise
                break
        self.dropped += len(view)

    def _relay(self) -> None:
        assert self._fw is not None
        while not self._closed:
            fds = [self._fw, self._wake_r] + ([] if self._unplugged else [self._master])
            try:
                readable, _, _ = select.select(fds, [], [])
            except (OSError, ValueError):  # a descriptor closed under us: the bridge is closing or replugging
                continue
            with self._lock:
                if self._closed:
                    return
                if self._fw in readable and not self._pump_firmware():
                    return
                if self._master in readable and not self._unplugged:
                    with contextlib.suppress(BlockingIOError, OSError):
                        data = os.read(self._master, 4096)
                        if data and not self._dead():
                            self._fw.sendall(data)
                if self._wake_r in readable:
                    os.read(self._wake_r, 64)

    def _pump_firmware(self) -> bool:
        """Relay what the firmware has sent so far; False once it has gone."""
        assert self._fw is not None
        while True:
            try:
                data = self._fw.recv(4096)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            self._to_host(data)

    def settle(self) -> None:
        """Put everything the firmware has written so far on the pty (stepped runs: the firmware wrote its
        frames before it asked the plant for the next sample, so they are in the socket by now)."""
        with self._lock:
            if self._fw is not None and not self._closed:
                self._pump_firmware()

    def garbage(self, toward_host: bool, data: bytes) -> None:
        with self._lock:
            if toward_host:
                self._to_host(data)
            elif self._fw is not None:
                self._fw.sendall(data)

    def silence(self, ms: int) -> None:
        with self._lock:
            self._silent_until_us = self.clock() + ms * 1000

    def unplug(self, ms: int) -> None:
        with self._lock:
            if not self._unplugged:
                self._close_pty()
                self._replug_at_us = self.clock() + ms * 1000
                os.write(self._wake_w, b"x")

    def on_sample(self, t_us: int) -> None:
        """PlantServer sample hook: the device comes back under a new name at the first sample whose
        plant time has reached its replug time, before the firmware handles it (as rigsim replugs on
        that sample), so the frames of that tick already go out on the new port."""
        if self._unplugged and t_us >= self._replug_at_us:
            with self._lock:
                if self._unplugged and not self._closed:
                    self._open_pty()
                    os.write(self._wake_w, b"x")

    def fault(self, message: str) -> None:
        """A serial fault in the virtual-wires notation (`G R|H <hex>`, `Q <ms>`, `U <ms>`)."""
        kind, arg = message[0], message[2:]
        if kind == "G":
            self.garbage(arg[0] == "H", bytes.fromhex(arg[2:]))
        elif kind == "Q":
            self.silence(int(arg))
        elif kind == "U":
            self.unplug(int(arg))
        else:
            raise ValueError(f"not a serial fault: {message!r}")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            for s in (self._fw, self._listener):
                if s is not None:
                    s.close()
            if not self._unplugged:
                self._close_pty()
            os.close(self._wake_r)
            os.close(self._wake_w)
        with contextlib.suppress(OSError):
            self.sock_path.unlink()
