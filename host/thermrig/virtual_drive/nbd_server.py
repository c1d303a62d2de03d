"""An NBD server on a Unix socket whose replies leave when a drive model says the request completes.

One thread serves every connection (a selector loop: no thread hand-offs per request); the handshake of
each new client runs in a short-lived thread of its own so a slow client cannot hold the others. The
loop parses requests (write payloads are received and dropped: no data is stored), checks them as the
protocol asks (EINVAL for a misaligned, empty, oversized or past-the-end request, ENOSPC for a write past
the end), asks the backend when each completes, and sends the replies at those times, reads carrying
zeros. Any number of clients; one that disconnects mid-request loses its connection only: what it sent
in full was served, the rest never reached the drive."""

from __future__ import annotations

import collections
import contextlib
import heapq
import os
import queue
import selectors
import socket
import threading
import time
from typing import Protocol

from thermrig.virtual_drive import nbd_protocol as nbd

BUFFER = 1 << 20  # receive buffer per connection: many requests (or several 128 KiB payloads) per recv
SOCKET_BUFFER = 4 << 20  # kernel buffers: deep queues of large requests do not stall on the socket
ZEROS = memoryview(bytes(nbd.MAX_PAYLOAD))  # what every read returns
IDLE_WAIT_S = 0.5  # the loop's longest sleep with nothing due
TURNAROUND_WEIGHT = 0.05  # of each new sample in the moving average
MAX_TURNAROUND_S = 0.005  # a longer gap is a client pausing, not the wire


class Backend(Protocol):
    size: int

    def submit(self, cmd: int, offset: int, length: int, now: float, turnaround: float) -> float:
        """Take one valid request arriving at `now` (time.monotonic); return when it completes. Called
        from the server's one loop thread. turnaround: the client's usual time from a reply to the
        request that follows it (this host's wire overhead, which a latency may absorb)."""
        ...


def check(cmd: int, offset: int, length: int, size: int) -> int:
    """The protocol's error for a request, 0 if it is valid."""
    if cmd == nbd.CMD_FLUSH:
        return 0 if offset == 0 and length == 0 else nbd.EINVAL
    if cmd not in (nbd.CMD_READ, nbd.CMD_WRITE, nbd.CMD_TRIM, nbd.CMD_WRITE_ZEROES):
        return nbd.EINVAL
    if length == 0 or offset % nbd.MIN_BLOCK or length % nbd.MIN_BLOCK:
        return nbd.EINVAL
    if cmd in (nbd.CMD_READ, nbd.CMD_WRITE) and length > nbd.MAX_PAYLOAD:
        return nbd.EINVAL
    if offset + length > size:
        return nbd.ENOSPC if cmd in (nbd.CMD_WRITE, nbd.CMD_WRITE_ZEROES) else nbd.EINVAL
    return 0


class _Connection:
    """One client in transmission: its receive buffer, a write whose payload is still arriving, and
    reply bytes the socket has not taken yet."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray(BUFFER)
        self.view = memoryview(self.buf)
        self.start = self.end = 0
        self.skip = 0  # payload bytes of the pending write still to drop
        self.pending: tuple[int, int, int, int] | None = None  # the write awaiting its payload
        self.out = b""  # reply bytes not yet sent
        self.alive = True
        self.events = selectors.EVENT_READ  # what the loop's selector watches for
        self.freed: collections.deque[float] = collections.deque()  # due times of replies not yet followed
        self.turnaround = 0.0  # moving average: a reply sent to the next request arriving

    def arrived(self, now: float) -> None:
        """A request arrived: a client that keeps its queue full sent it for the oldest reply not yet
        followed by one; from that reply's due time to now is the wire's turnaround (the loop waking
        late, the client's own time, the loop noticing the request)."""
        if not self.freed:
            return
        gap = min(now - self.freed.popleft(), MAX_TURNAROUND_S)
        self.turnaround += TURNAROUND_WEIGHT * (gap - self.turnaround)

    def receive(self) -> bool:
        """Read what the socket has; False when the client is gone."""
        if self.start == self.end:
            self.start = self.end = 0
        elif self.end == len(self.buf):  # full: move the partial request to the front
            n = self.end - self.start
            self.view[:n] = self.view[self.start : self.end]
            self.start, self.end = 0, n
        try:
            got = self.sock.recv_into(self.view[self.end :])
        except BlockingIOError:
            return True
        except OSError:
            return False
        self.end += got
        return got > 0

    def requests(self) -> list[tuple[int, int, int, int]] | None:
        """Complete requests in the buffer: (cmd, cookie, offset, length); None if the stream is out of
        step (a bad magic) or the client asked to disconnect."""
        out: list[tuple[int, int, int, int]] = []
        while True:
            if self.skip:
                take = min(self.skip, self.end - self.start)
                self.start += take
                self.skip -= take
                if self.skip:
                    return out
                assert self.pending is not None
                out.append(self.pending)
                self.pending = None
            if self.end - self.start < nbd.REQUEST.size:
                return out
            magic, _flags, cmd, cookie, offset, length = nbd.REQUEST.unpack_from(self.buf, self.start)
            self.start += nbd.REQUEST.size
            if magic != nbd.REQUEST_MAGIC or cmd == nbd.CMD_DISC:
                self.alive = False
                return out if magic == nbd.REQUEST_MAGIC else None
            if cmd == nbd.CMD_WRITE and length:  # served once its payload is all here
                self.skip, self.pending = length, (cmd, cookie, offset, length)
            else:
                out.append((cmd, cookie, offset, length))

    def send(self, data: bytes | list[bytes | memoryview]) -> bool:
        """Send replies after any still queued; False when the client is gone."""
        try:
            if isinstance(data, list):
                if self.out:
                    self.out += b"".join(bytes(p) for p in data)
                else:
                    total = sum(len(p) for p in data)
                    sent = self.sock.sendmsg(data)
                    if sent < total:
                        self.out = b"".join(bytes(p) for p in data)[sent:]
            if self.out:
                sent = self.sock.send(self.out)
                self.out = self.out[sent:]
        except BlockingIOError:
            if isinstance(data, list) and not self.out:
                self.out = b"".join(bytes(p) for p in data)
        except OSError:
            return False
        return True


class NbdServer:
    """Serves `backend` at `path` until closed."""

    def __init__(self, backend: Backend, path: str) -> None:
        self.backend = backend
        self.path = path
        self._closed = False
        self._new: queue.Queue[socket.socket] = queue.Queue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(8)
        self._threads = [
            threading.Thread(target=self._accept_loop, name="nbd-accept", daemon=True),
            threading.Thread(target=self._loop, name="nbd-serve", daemon=True),
        ]
        for t in self._threads:
            t.start()

    # --- new clients ---------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._negotiate, args=(sock,), name="nbd-handshake", daemon=True).start()

    def _negotiate(self, sock: socket.socket) -> None:
        try:
            sock.settimeout(10.0)  # a client that stalls in the handshake is dropped
            if nbd.handshake(sock, nbd.Export("virtual", self.backend.size)):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
                sock.setblocking(False)
                self._new.put(sock)
                self._wake_w.send(b"n")
                return
        except (OSError, nbd.HandshakeError):
            pass
        sock.close()

    # --- the loop ------------------------------------------------------------------------------------

    def _loop(self) -> None:
        sel = selectors.SelectSelector()  # select(2) sleeps to the microsecond; epoll to the millisecond
        sel.register(self._wake_r, selectors.EVENT_READ)
        due: list[tuple[float, int, _Connection, int, int, int]] = []  # when, order, conn, cookie, error, bytes
        seq = 0
        conns: list[_Connection] = []
        size = self.backend.size
        try:
            while True:
                wait = IDLE_WAIT_S if not due else max(0.0, min(IDLE_WAIT_S, due[0][0] - time.monotonic()))
                for key, events in sel.select(wait):
                    if key.fileobj is self._wake_r:
                        with contextlib.suppress(BlockingIOError):
                            self._wake_r.recv(4096)
                        if self._closed:
                            return
                        while not self._new.empty():
                            conn = _Connection(self._new.get())
                            conns.append(conn)
                            sel.register(conn.sock, selectors.EVENT_READ, conn)
                        continue
                    conn = key.data
                    if events & selectors.EVENT_WRITE and not conn.send(b""):
                        conn.alive = False
                    if events & selectors.EVENT_READ:
                        alive = conn.receive()
                        batch = conn.requests()
                        now = time.monotonic()
                        for cmd, cookie, offset, length in batch or ():
                            error = check(cmd, offset, length, size)
                            conn.arrived(now)
                            when = now if error else self.backend.submit(cmd, offset, length, now, conn.turnaround)
                            read = length if cmd == nbd.CMD_READ and not error else 0
                            seq += 1
                            heapq.heappush(due, (when, seq, conn, cookie, error, read))
                        if not alive or batch is None:
                            conn.alive = False
                self._send_due(due)
                for conn in conns:
                    if not conn.alive:
                        sel.unregister(conn.sock)
                        conn.sock.close()
                        continue
                    want = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
                    if want != conn.events:  # watch for room in the socket only while replies wait
                        sel.modify(conn.sock, want, conn)
                        conn.events = want
                conns = [c for c in conns if c.alive]
        finally:
            for conn in conns:
                conn.sock.close()
            sel.close()

    @staticmethod
    def _send_due(due: list[tuple[float, int, _Connection, int, int, int]]) -> None:
        """Every reply that is due, one sendmsg per connection."""
        now = time.monotonic()
        parts: dict[_Connection, list[bytes | memoryview]] = {}
        sent: dict[_Connection, list[float]] = {}
        while due and due[0][0] <= now:
            when, _, conn, cookie, error, read = heapq.heappop(due)
            if not conn.alive:
                continue
            mine = parts.setdefault(conn, [])
            sent.setdefault(conn, []).append(when)
            mine.append(nbd.REPLY.pack(nbd.SIMPLE_REPLY_MAGIC, error, cookie))
            if read:
                mine.append(ZEROS[:read])
            if len(mine) > 500:  # under IOV_MAX (1024)
                conn.alive = conn.send(mine)
                parts[conn] = []
        for conn, mine in parts.items():
            if mine and conn.alive:
                conn.alive = conn.send(mine)
        for conn, dues in sent.items():
            conn.freed.extend(dues)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for t in self._threads:
            t.join(timeout=2)
        self._wake_r.close()
        self._wake_w.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
