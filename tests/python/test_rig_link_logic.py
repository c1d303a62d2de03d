"""RigLink's retry, resend and reconnect logic against a serial-like object the test scripts (injected
through RigLink's opener): fast, without a pty or a simulated rig."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
import serial
from waiting import wait_for

from thermrig.link.rig_link import EVENT_HISTORY, NakError, RigLink, RigTimeout
from thermrig.link.timesync import TimeSync
from thermrig.protocol.frame import Frame, decode, encode
from thermrig.sim.server import CATCH_UP

HELLO_REPLY = ("fw=scripted", "ver=0.0.1", "proto=1", "ch=tc0:drive_ctrl")
Answer = Callable[[Frame, int], tuple[str, tuple[str, ...]] | None]  # (type, args after the seq), or None: silent


class ScriptedPort:
    """A rig on a serial-like object: each command frame the host writes gets the answer the test's
    function gives (None: the reply is lost). unplug() makes it fail like a vanished USB device."""

    baudrate = 115200

    def __init__(self, answer: Answer, board: str = "scripted", hello: tuple[str, ...] = ()) -> None:
        self.answer = answer
        self.board = board
        self.hello = hello  # more HELLO fields
        self.sent: list[Frame] = []
        self.raw: list[bytes] = []
        self._rx = bytearray()
        self._cond = threading.Condition()
        self._seq = 0
        self.broken = False

    @property
    def in_waiting(self) -> int:
        return len(self._rx)

    def read(self, n: int) -> bytes:
        with self._cond:
            if not self._rx and not self.broken:
                self._cond.wait(0.05)  # as a port opened with a 50 ms timeout
            if self.broken:
                raise serial.SerialException("device reports readiness to read but returned no data")
            out = bytes(self._rx[:n])
            del self._rx[:n]
            return out

    def write(self, data: bytes) -> int:
        if self.broken:
            raise serial.SerialException("write failed: the device is gone")
        frame = decode(data.rstrip(b"\r\n"))
        self.raw.append(data)
        self.sent.append(frame)
        attempt = sum(1 for f in self.sent if f.seq == frame.seq)
        if frame.type == "HELLO":
            reply: tuple[str, tuple[str, ...]] | None = ("ACK", (*HELLO_REPLY, f"board={self.board}", *self.hello))
        else:
            reply = self.answer(frame, attempt)
        if reply is not None:
            self._seq += 1
            with self._cond:
                self._rx += encode(self._seq, reply[0], (str(frame.seq), *reply[1]))
                self._cond.notify_all()
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def reset_input_buffer(self) -> None:
        self._rx.clear()

    def unplug(self) -> None:
        with self._cond:
            self.broken = True
            self._cond.notify_all()

    def tell(self, *frames: tuple[str, tuple[str, ...]]) -> None:
        """Frames the rig sends of its own accord (events, telemetry), all at once."""
        with self._cond:
            for type_, args in frames:
                self._seq += 1
                self._rx += encode(self._seq, type_, args)
            self._cond.notify_all()


def ack(frame: Frame, attempt: int) -> tuple[str, tuple[str, ...]]:
    return ("ACK", ("us=1000",) if frame.type == "PING" else ())


def link_to(*ports: ScriptedPort) -> RigLink:
    """A link whose opener hands out the given ports in turn (the first at start, then one per reopen)."""
    queue = list(ports)
    return RigLink("scripted://rig", opener=lambda name: queue.pop(0))


def test_a_lost_reply_is_resent_under_the_same_sequence_number() -> None:
    port = ScriptedPort(lambda f, attempt: None if attempt == 1 else ack(f, attempt))
    with link_to(port) as link:
        reply = link.command("SET", "fan0=550", timeout=0.1)
        assert reply.type == "ACK"
        first, again = port.raw
        assert first == again and port.sent[0].seq == port.sent[1].seq  # the very same frame: applied once
        assert link.stats.retries == 1
        link.command("CLEAR", timeout=0.1)
        assert port.sent[2].seq == (port.sent[0].seq + 1) % 0x10000  # a new command, a new number


def test_a_ping_answered_after_a_resend_is_bounded_from_its_first_send() -> None:
    # The rig may be answering the first PING while the host resends it (a reply queued behind telemetry
    # the host has not read yet): the time sync's bounds hold only from the first send.
    sends: list[float] = []

    def late(f: Frame, attempt: int) -> tuple[str, tuple[str, ...]] | None:
        sends.append(time.time())
        return ack(f, attempt) if attempt == 3 else None

    with link_to(ScriptedPort(late)) as link:
        sample = link.ping(timeout=0.02)
        assert len(sends) == 3
        assert sample.host_send <= sends[0] < sends[-1] <= sample.host_recv


def test_silence_after_every_retry_is_a_timeout() -> None:
    port = ScriptedPort(lambda f, attempt: None)
    with link_to(port) as link:
        with pytest.raises(RigTimeout, match="after 3 tries"):
            link.command("CLEAR", timeout=0.02, retries=2)
        assert len(port.sent) == 3 and len(set(port.raw)) == 1
        assert link.stats.retries == 2


def test_a_refusal_is_an_error_and_not_retried() -> None:
    port = ScriptedPort(lambda f, attempt: ("NAK", ("RANGE", "air")))
    with link_to(port) as link:
        with pytest.raises(NakError, match=r"rig refused SET air=8000: RANGE \(air\)"):
            link.command("SET", "air=8000", timeout=0.1)
        assert len(port.sent) == 1 and link.stats.naks_received == 1


def test_an_unplugged_port_is_reopened_greeted_again_and_commands_resume() -> None:
    first, second = ScriptedPort(ack, board="first"), ScriptedPort(ack, board="second")
    with link_to(first, second) as link:
        assert link.hello().board == "first"
        first.unplug()
        assert wait_for(lambda: link.stats.reconnects == 1)
        assert [e.kind for e in link.events][:2] == ["link_lost", "link_restored"]
        assert wait_for(lambda: link.info is not None and link.info.board == "second")  # HELLO on the new port
        assert link.ping().mcu_us == 1000
        assert [f.type for f in second.sent][:1] == ["HELLO"]


def test_a_command_sent_while_the_port_is_away_goes_through_after_the_reopen() -> None:
    first, second = ScriptedPort(ack), ScriptedPort(ack)
    with link_to(first, second) as link:
        first.unplug()
        reply = link.command("SAFE", timeout=0.2, retries=20)  # written to the dead port, then resent
        assert reply.type == "ACK" and any(f.type == "SAFE" for f in second.sent)
        assert link.stats.reconnects == 1


def test_the_event_history_keeps_the_newest_while_the_counts_stay_exact() -> None:
    # A long run's events would otherwise pile up in the link: it keeps the newest EVENT_HISTORY, and
    # counts every one by kind (a record of the whole run has them all through its event listener).
    raised = EVENT_HISTORY + 500
    heard: list[str] = []
    port = ScriptedPort(ack)
    with link_to(port) as link:
        link.set_event_listener(lambda e: heard.append(e.detail))
        port.tell(*(("EVT", ("FAULT", f"n={i}")) for i in range(raised)))
        assert wait_for(lambda: link.stats.events.get("rig_fault", 0) == raised)
        events = link.events
        assert len(events) == EVENT_HISTORY
        assert [e.detail for e in events] == [f"FAULT n={i}" for i in range(raised - EVENT_HISTORY, raised)]
        assert len(heard) == raised and heard[0] == "FAULT n=0"


def test_the_links_state_is_read_only_from_outside() -> None:
    wrote: list[int] = []

    def count() -> None:
        wrote.append(1)

    with link_to(ScriptedPort(ack)) as link:
        for name, value in (("sync", TimeSync()), ("info", None), ("latest", None), ("connected", False)):
            with pytest.raises(AttributeError):
                setattr(link, name, value)
        link.stats.retries = 99  # a copy: the link's own count stays
        assert link.stats.retries == 0
        link.add_send_listener(count)
        link.hello()
        link.remove_send_listener(count)
        link.ping()
        assert wrote == [1]  # told of the HELLO it heard, not of the PING after


def test_the_keepalive_follows_the_host_timeout_the_rig_reports() -> None:
    port = ScriptedPort(ack, hello=("hto=600",))
    with link_to(port) as link:
        assert link.keepalive_interval() == 0.5  # before HELLO: the protocol's 3 s, six pings in it
        assert link.hello().host_timeout_s == 0.6
        assert link.keepalive_interval() == pytest.approx(0.1)
        assert link.keepalive_interval(speed=10) == pytest.approx(0.01)  # six per timeout, in rig seconds
        link.start_keepalive()
        assert wait_for(lambda: sum(f.type == "PING" for f in port.sent) >= 3)


def test_a_firmware_without_hto_gets_the_protocols_three_seconds() -> None:
    with link_to(ScriptedPort(ack)) as link:
        assert link.hello().host_timeout_s == 3.0
        assert link.keepalive_interval() == 0.5
        assert link.keepalive_interval(speed=1) == 0.5
        assert link.keepalive_interval(speed=10) == pytest.approx(0.05)


def test_a_served_simulation_catching_up_still_hears_its_host_three_times_per_timeout() -> None:
    """A host that does not know its rig is simulated (a lab's place, over RFC 2217) pings at the real-time
    interval; a simulated plant behind its schedule serves ticks at CATCH_UP times its pace, so in the rig's
    time those pings come CATCH_UP times further apart, and must still come three times per timeout (a
    keepalive at one a second came every 2 s of rig time there: a host a second late lost the rig)."""
    with link_to(ScriptedPort(ack)) as link:
        timeout_s = link.hello().host_timeout_s
        assert link.keepalive_interval() * CATCH_UP <= timeout_s / 3


class SlowFlushPort(ScriptedPort):
    """A port whose flush waits for the test's word (a write draining to a slow device), and which
    records whether it was closed while a flush was under way (pyserial's flush then fails on the
    closed descriptor: termios.error, which no caller expects)."""

    def __init__(self) -> None:
        super().__init__(ack)
        self.flushing = threading.Event()
        self.drained = threading.Event()
        self.closed = threading.Event()
        self.closed_mid_flush = False

    def flush(self) -> None:
        self.flushing.set()
        self.drained.wait(10)
        self.flushing.clear()

    def close(self) -> None:
        self.closed_mid_flush = self.flushing.is_set()
        self.closed.set()
        self.drained.set()


def test_the_link_closes_its_port_only_between_writes() -> None:
    # A re-handshake's HELLO was being written when the link closed (a test's rig going away): the port
    # closed between its write and its flush, and the thread died on termios.error.
    port = SlowFlushPort()
    link = link_to(port)
    writer = threading.Thread(target=link.write_raw, args=(encode(1, "PING", ()),))
    writer.start()
    assert port.flushing.wait(10)
    closer = threading.Thread(target=link.close)
    closer.start()
    # the close waits for the write: the port is not closed while its flush is under way (a second is
    # ample for the old code to have closed it; the new one holds it until the flush is done)
    port.closed.wait(1.0)
    port.drained.set()
    writer.join(10)
    closer.join(10)
    assert port.closed.is_set() and not port.closed_mid_flush
