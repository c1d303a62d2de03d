"""RigLink: HELLO handshake with version check, commands with ack/timeout/retry, telemetry stream,
sequence-continuity and error counters, time sync by PING, and recovery: reconnect with backoff when
the port goes away, re-handshake after an MCU reset, and gaps in the data marked as events.

The port is opened through an opener (open_port by default): tests pass one that returns a serial-like
object of their own, so the retry, resend and reconnect logic runs without a pty."""

from __future__ import annotations

import collections
import contextlib
import logging
import queue
import random
import threading
import time
from collections.abc import Callable

import serial

from thermrig.link.boot_failure import BootFailed
from thermrig.link.errors import NakError, RigTimeout, VersionMismatch
from thermrig.link.events import LinkEvent, LinkStats
from thermrig.link.stored_gains import StoredGains
from thermrig.link.timesync import ClockPace, SyncSample, TimeSync
from thermrig.link.transport import PortError, find_port, open_port, usb_identity
from thermrig.protocol.channels import ChannelMap
from thermrig.protocol.frame import (
    PROTO_VERSION,
    Frame,
    FrameDecodeError,
    FrameError,
    LineAssembler,
    decode,
    encode,
)
from thermrig.protocol.heap_report import HeapReport
from thermrig.protocol.limits import HOST_TIMEOUT_S
from thermrig.protocol.messages import Nak, ProtocolError, RigInfo, Telemetry, flag_names

COMMAND_TIMEOUT_S = 0.5
COMMAND_RETRIES = 3
RECONNECT_BACKOFF_S = (0.05, 0.5)  # first wait, longest wait; doubling in between (a path check is cheap)
GAP_FACTOR = 1.5  # telemetry further apart than this many periods is a gap
# Keepalive PINGs per host timeout (HELLO's hto=), counted in the rig's time: six, so a rig still hears its
# host three times per timeout when its clock runs twice the host's (a simulated plant catching up after
# the machine was busy, sim/server.py's CATCH_UP) or the host's thread waits a second for the CPU.
KEEPALIVE_PER_TIMEOUT = 6
KEEPALIVE_MAX_S = 0.5
PACE_BURST_TICKS = 2.5  # after a clock's pace changes: ping often for this many of its ticks,
PACE_BURST_PINGS_PER_TICK = 50  # this often (their bounds on the tick edges place the new fit)
# The newest events the link keeps (RigLink.events). Its readers look back only a little way: the fault
# matrix for the gap or restore it just provoked, a test for the first few; the record of a whole run is
# the on_event listener's (the recorder writes every event to the database), and the counts over a run
# are LinkStats' counters (events by kind among them). A flapping link over a week-long run would
# otherwise keep every event it ever raised; a thousand is far more than any look back needs.
EVENT_HISTORY = 1000

# Opens a port by name (a device path or pyserial URL) into a serial-like object: read(n), in_waiting,
# write, flush, close, reset_input_buffer, baudrate; raises PortError when it cannot.
Opener = Callable[[str], serial.SerialBase]

log = logging.getLogger(__name__)


class RigLink:
    """One connection to a rig. Use as a context manager; call hello() first."""

    def __init__(
        self, port: str, on_event: Callable[[LinkEvent], None] | None = None, opener: Opener = open_port
    ) -> None:
        self._port = port
        self._open = opener
        self._identity = usb_identity(port)
        self._ser: serial.SerialBase = opener(port)
        self._ser.reset_input_buffer()
        self._write_lock = threading.Lock()
        self._pending: dict[int, queue.Queue[Frame]] = {}
        self._pending_lock = threading.Lock()
        self._naming_lock = threading.Lock()  # telemetry is read with the map HELLO set, or named after it
        # A fresh random start per session: a restarted host never resends its predecessor's last frame.
        self._seq = random.randrange(0x10000)
        self._last_rig_seq: int | None = None
        self._last_tel: Telemetry | None = None
        self._last_tel_utc = 0.0
        self._connected = True
        self._events: collections.deque[LinkEvent] = collections.deque(maxlen=EVENT_HISTORY)
        self._events_lock = threading.Lock()  # one thread appends while another copies
        self._telemetry_queue: queue.Queue[Telemetry] = queue.Queue(maxsize=100_000)
        self._subscribers: list[queue.Queue[Telemetry]] = [self._telemetry_queue]
        self._latest: Telemetry | None = None
        self._stats = LinkStats()
        self._sync = TimeSync()
        self._info: RigInfo | None = None
        self._gains: StoredGains | None = None  # the gains sent after every HELLO (send_gains), if any
        self._telemetry_period_ms = 100
        self._on_event = on_event
        # told after each frame written (a simulation's gate); a tuple replaced whole, so a writer's loop
        # over it never sees a listener added or removed meanwhile
        self._send_listeners: tuple[Callable[[], None], ...] = ()
        self._listeners_lock = threading.Lock()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name="rig-reader", daemon=True)
        self._reader.start()
        self._keepalive: threading.Thread | None = None

    def __enter__(self) -> RigLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._keepalive is not None:
            self._keepalive.join(timeout=2)
        self._reader.join(timeout=2)
        with self._write_lock:  # never between a write and its flush (pyserial's flush on a closed port:
            self._ser.close()  # termios.error, which no writer expects)

    # --- state, read from outside (only the link changes it) -------------------------------------

    @property
    def port(self) -> str:
        """The port as the link was opened on (a device path or pyserial URL)."""
        return self._port

    @property
    def connected(self) -> bool:
        """False from a lost port until it is open again."""
        return self._connected

    @property
    def events(self) -> tuple[LinkEvent, ...]:
        """The newest EVENT_HISTORY events, oldest first: a copy. Every event goes to on_event as it
        happens, and stats.events counts them all by kind."""
        with self._events_lock:
            return tuple(self._events)

    @property
    def telemetry_queue(self) -> queue.Queue[Telemetry]:
        """The link's own queue of telemetry (next_telemetry, drain_telemetry read it)."""
        return self._telemetry_queue

    @property
    def latest(self) -> Telemetry | None:
        """The newest telemetry frame, None before the first."""
        return self._latest

    @property
    def stats(self) -> LinkStats:
        """The link's counters now: a copy, which stays as it was when read."""
        return self._stats.copy()

    @property
    def sync(self) -> TimeSync:
        """The time sync of this MCU run (a new one after an MCU reset): read it again for the newest."""
        return self._sync

    @property
    def info(self) -> RigInfo | None:
        """What the rig said in its last HELLO; None before the first."""
        return self._info

    @property
    def gains(self) -> StoredGains | None:
        """The air-loop gains sent after every HELLO (send_gains), if any."""
        return self._gains

    @property
    def telemetry_period_ms(self) -> int:
        """The telemetry period the host last set (SET rate=), 100 ms until then."""
        return self._telemetry_period_ms

    @property
    def on_event(self) -> Callable[[LinkEvent], None] | None:
        """Told each event as it happens (set_event_listener)."""
        return self._on_event

    def set_event_listener(self, listener: Callable[[LinkEvent], None] | None) -> None:
        """Tell listener each event from now on, in place of the one before (None: nobody): a recorder
        writes them all into the record of its run."""
        self._on_event = listener

    def add_send_listener(self, listener: Callable[[], None]) -> None:
        """Call listener after each frame the host writes (a simulation holding its time to the host's)."""
        with self._listeners_lock:
            self._send_listeners = (*self._send_listeners, listener)

    def remove_send_listener(self, listener: Callable[[], None]) -> None:
        """Stop calling a listener add_send_listener added; ValueError if it was not."""
        with self._listeners_lock:
            listeners = list(self._send_listeners)
            listeners.remove(listener)
            self._send_listeners = tuple(listeners)

    # --- receiving -------------------------------------------------------------------------------

    def _emit(self, event: LinkEvent) -> None:
        with self._events_lock:  # events come from the reader and from a HELLO's caller: none uncounted
            self._events.append(event)
            self._stats.events[event.kind] = self._stats.events.get(event.kind, 0) + 1
        on_event = self._on_event
        if on_event is not None:
            on_event(event)

    def _read_loop(self) -> None:
        lines = LineAssembler()
        while not self._stop.is_set():
            try:
                chunk = self._ser.read(self._ser.in_waiting or 1)
            except (serial.SerialException, OSError, TypeError) as exc:
                if self._stop.is_set():
                    return
                self._reconnect(str(exc))
                lines = LineAssembler()
                continue
            if not chunk:
                continue
            for line in lines.feed(chunk):
                if line:
                    self._handle_line(line)

    def _reconnect(self, why: str) -> None:
        """The port went away (USB unplug, rig power cycle): reopen it with backoff, then handshake."""
        lost_at = time.time()
        self._connected = False
        self._emit(LinkEvent("link_lost", lost_at, why))
        with self._write_lock, contextlib.suppress(OSError, serial.SerialException):
            self._ser.close()
        wait = RECONNECT_BACKOFF_S[0]
        while not self._stop.is_set():
            where = find_port(self._port, self._identity)
            if where is not None:
                try:
                    ser = self._open(where)
                except PortError:
                    pass
                else:
                    with self._write_lock:
                        self._ser = ser
                    break
            self._stop.wait(wait)
            wait = min(wait * 2, RECONNECT_BACKOFF_S[1])
        else:
            return
        self._last_rig_seq = None
        self._connected = True
        self._stats.reconnects += 1
        self._emit(LinkEvent("link_restored", time.time(), f"{self._port} after {time.time() - lost_at:.2f} s"))
        self._rehandshake()

    def _rehandshake(self) -> None:
        """HELLO again from another thread (the reader must stay free to read the reply)."""

        def run() -> None:
            for _ in range(5):
                try:
                    self.hello()
                    return
                except (RigTimeout, ProtocolError, OSError, serial.SerialException, TypeError):
                    # TypeError: pyserial's write on a port the link closed meanwhile (its abort pipe gone)
                    if self._stop.wait(0.2):
                        return

        threading.Thread(target=run, name="rig-rehandshake", daemon=True).start()

    def _count_error(self, kind: str) -> None:
        self._stats.decode_errors[kind] = self._stats.decode_errors.get(kind, 0) + 1

    def _handle_line(self, line: bytes | FrameError) -> None:
        if isinstance(line, FrameError):
            self._count_error(line.value)
            return
        try:
            frame = decode(line)
        except FrameDecodeError as exc:
            self._count_error(exc.kind.value)
            return
        self._stats.frames += 1
        boot = frame.type == "EVT" and frame.words()[:1] == ["BOOT"]
        if self._last_rig_seq is not None and not boot:  # a reboot restarts the rig's numbering
            self._stats.lost_frames += (frame.seq - self._last_rig_seq - 1) % 0x10000
        self._last_rig_seq = frame.seq
        if frame.type == "TEL":
            with self._naming_lock:
                try:
                    tel = Telemetry.from_frame(frame, self._info.channels if self._info else None)
                except ProtocolError:
                    self._count_error("TEL")
                    return
                self._stats.telemetry += 1
                self._check_continuity(tel)
                for q in self._subscribers:
                    with contextlib.suppress(queue.Full):
                        q.put_nowait(tel)
                self._latest = tel  # after the queues: whoever sees it here finds it in their queue too
        elif frame.type in ("ACK", "NAK"):
            if frame.type == "NAK":
                self._stats.naks_received += 1
            with self._pending_lock:
                target = None
                if frame.args and frame.args[0].isdigit():
                    target = self._pending.get(int(frame.args[0]))
            if target is not None:
                target.put(frame)
        elif frame.type == "EVT":
            if boot:
                self._mcu_reset(f"EVT BOOT {frame.kv().get('cause', '?')}")
            else:
                self._emit(LinkEvent("rig_fault", time.time(), " ".join(frame.args)))

    def _mcu_reset(self, why: str) -> None:
        """The MCU restarted: its uptime and numbering start again, its settings are gone."""
        self._stats.mcu_resets += 1
        self._sync = self._sync.restarted()
        self._emit(LinkEvent("mcu_reset", time.time(), why))
        if self._last_tel is not None:
            self._emit(LinkEvent("gap", time.time(), "MCU reset", start_utc=self._last_tel_utc))
        self._last_tel = None
        self._rehandshake()

    def _check_continuity(self, tel: Telemetry) -> None:
        """Mark gaps from the rig's own clock (works at any simulation speed), and resets it missed."""
        prev = self._last_tel
        now = time.time()
        if prev is not None:
            if tel.uptime_ms < prev.uptime_ms:
                self._last_tel = tel
                self._mcu_reset("uptime went backwards")
            elif tel.uptime_ms - prev.uptime_ms > GAP_FACTOR * self._telemetry_period_ms:
                self._stats.gaps += 1
                missing = tel.uptime_ms - prev.uptime_ms
                self._emit(LinkEvent("gap", now, f"no telemetry for {missing} ms of rig time", self._last_tel_utc))
        self._last_tel = tel
        self._last_tel_utc = now

    # --- commands --------------------------------------------------------------------------------

    def write_raw(self, data: bytes) -> None:
        with self._write_lock:
            self._ser.write(data)
            self._ser.flush()
        for listener in self._send_listeners:
            listener()

    def command(
        self, type_: str, *args: str, timeout: float = COMMAND_TIMEOUT_S, retries: int = COMMAND_RETRIES
    ) -> Frame:
        """Send a command and wait for its ACK. Retries resend the same sequence number; every command
        is idempotent, so a retry after a lost ACK applies nothing twice."""
        reply = self.exchange(type_, args, timeout, retries)[0]
        if reply.type == "NAK":
            nak = Nak.from_frame(reply)
            latest = self._latest
            latched = flag_names(latest.faults) if nak.reason == "STATE" and latest and latest.faults else ""
            raise NakError(" ".join([type_, *args]), nak, latched)
        return reply

    def exchange(
        self, type_: str, args: tuple[str, ...], timeout: float, retries: int, seq: int | None = None
    ) -> tuple[Frame, float, float]:
        """Send a frame and return (reply, host send time, host receive time), ACK or NAK alike. The send
        time is the first attempt's: a reply to an earlier attempt may arrive after a resend, and the
        time sync's bounds must hold whichever attempt the rig answered.
        seq: resend under a sequence number already used (the rig then repeats its reply)."""
        if seq is None:
            self._seq = (self._seq + 1) % 0x10000
            seq = self._seq
        data = encode(seq, type_, args)
        box: queue.Queue[Frame] = queue.Queue()
        with self._pending_lock:
            self._pending[seq] = box
        first_sent = 0.0
        try:
            for attempt in range(retries + 1):
                if attempt:
                    self._stats.retries += 1
                sent = time.time()
                first_sent = first_sent or sent
                try:
                    self.write_raw(data)
                except (serial.SerialException, OSError):
                    self._stop.wait(timeout)  # the port is away; the reader is reconnecting
                    continue
                try:
                    reply = box.get(timeout=timeout)
                    return reply, first_sent, time.time()
                except queue.Empty:
                    continue
            raise RigTimeout(f"no reply from the rig on {self._port} to {type_} after {retries + 1} tries")
        finally:
            with self._pending_lock:
                self._pending.pop(seq, None)

    def hello(self, timeout: float = 1.0) -> RigInfo:
        try:
            reply = self.exchange("HELLO", (f"proto={PROTO_VERSION}",), timeout, 2)[0]
        except RigTimeout as exc:
            raise RigTimeout(
                f"no HELLO reply from {self._port}: is a thermrig rig on this port (firmware running, "
                f"{self._ser.baudrate} baud)?"
            ) from exc
        if reply.type == "NAK":
            nak = Nak.from_frame(reply)
            if nak.reason == "VERSION":
                theirs = (nak.detail or "proto=?").removeprefix("proto=")
                raise VersionMismatch(
                    f"the rig on {self._port} speaks protocol {theirs}, this host speaks protocol "
                    f"{PROTO_VERSION}: update the host package or flash matching firmware"
                )
            if nak.reason == "BOOT":
                raise BootFailed("HELLO", nak)
            raise NakError("HELLO", nak)
        info = RigInfo.from_ack(reply)
        if info.proto != PROTO_VERSION:
            raise VersionMismatch(
                f"the rig on {self._port} speaks protocol {info.proto}, this host speaks {PROTO_VERSION}"
            )
        with self._naming_lock:
            self._info = info
            self._name_queued(info.channels)
        self._send_gains()
        return info

    @property
    def usb_serial(self) -> str | None:
        """The USB serial number of the rig's port, if it is a USB device (part of the rig's identity)."""
        return self._identity.serial_number if self._identity is not None else None

    def send_gains(self, gains: StoredGains | None) -> None:
        """Send these air-loop gains now and after every later HELLO, the reader's re-handshakes included (a
        rig that reset runs its firmware's gains again); None: send none from now on (the rig keeps what it
        runs until it resets). Which gains, if any, is the choice of whoever opens the rig
        (thermrig.testbed): the link reads no file."""
        self._gains = gains
        if self._info is not None:
            self._send_gains()

    def _send_gains(self) -> None:
        if self._gains is None:
            return
        try:
            self.set(**self._gains.gains.set_args())
        except NakError as exc:  # the connection stands; the rig runs its own gains (a firmware without them)
            log.warning("%s: the rig keeps its firmware's air-loop gains: %s", self._port, exc)
            self._gains = None
            return
        detail = f"sent the stored air-loop gains {self._gains.gains.describe()} ({self._gains.path})"
        log.info("%s: %s", self._port, detail)
        self._emit(LinkEvent("gains", time.time(), detail))

    def _name_queued(self, channels: ChannelMap) -> None:
        """Frames read before HELLO know their channels by key only: name the ones still queued."""
        for q in self._subscribers:
            with q.mutex:
                q.queue = collections.deque(t.with_channels(channels) for t in q.queue)
        if self._latest is not None:
            self._latest = self._latest.with_channels(channels)

    def set(self, **values: int) -> None:
        self.command("SET", *(f"{k}={v}" for k, v in values.items()))
        if "rate" in values:
            self._telemetry_period_ms = values["rate"] or self._telemetry_period_ms

    def heap_report(self) -> HeapReport:
        """The MicroPython firmware's heap and its longest collection and tick (MEM); a C firmware has no
        heap and answers NAK UNKNOWN, which raises ProtocolError."""
        try:
            return HeapReport.from_ack(self.command("MEM"))
        except NakError as exc:
            if exc.nak.reason != "UNKNOWN":
                raise
            firmware = self._info.firmware if self._info else "this firmware"
            raise ProtocolError(f"{firmware} does not report a heap (MEM): only the MicroPython firmware does") from exc

    def ping(self, timeout: float = COMMAND_TIMEOUT_S) -> SyncSample:
        """timeout: per attempt (a keepalive resends within its interval, so the rig hears the host on
        time even while the reply waits behind telemetry the host has not read yet)."""
        reply, sent, received = self.exchange("PING", (), timeout, COMMAND_RETRIES)
        sample = SyncSample(sent, int(reply.kv()["us"]), received)
        self._sync.add(sample)
        return sample

    def follow_pace(self, pace: ClockPace, at_utc: float) -> None:
        """A simulated rig's clock runs at another pace from at_utc (SimulatedRig.watch_clock): the time
        sync starts a new fit there, and pings go back to back over its first ticks, whose edges bound
        the new fit tightly from the start."""
        changed = pace != self._sync.pace
        self._sync.set_pace(pace, at_utc)
        if not changed or pace.rate is None or not pace.step_us:
            return
        tick = pace.step_us * 1e-6 * pace.rate
        until = time.time() + PACE_BURST_TICKS * tick

        def burst() -> None:
            while time.time() < until and not self._stop.wait(tick / PACE_BURST_PINGS_PER_TICK):
                try:
                    self.ping()
                except (RigTimeout, OSError, serial.SerialException, TypeError, ValueError):
                    return  # the link went away under the burst (closed, unplugged): nothing to sync

        threading.Thread(target=burst, name="rig-pace-burst", daemon=True).start()

    def keepalive_interval(self, speed: float | None = None) -> float:
        """Seconds between keepalive PINGs: six per host timeout the rig reported in HELLO (3 s for a
        firmware that reports none), at most two a second; a simulation running `speed` times real time
        counts that timeout in its own seconds, so its host pings `speed` times as often."""
        timeout_s = self._info.host_timeout_s if self._info is not None else HOST_TIMEOUT_S
        return min(KEEPALIVE_MAX_S, timeout_s / KEEPALIVE_PER_TIMEOUT / (speed or 1.0))

    def start_keepalive(self, speed: float | None = None) -> None:
        """Ping at keepalive_interval(speed): the heartbeat the firmware needs while heating, and time
        sync. The interval follows the rig's HELLO, a re-handshake included."""

        def loop() -> None:
            while not self._stop.wait(interval := self.keepalive_interval(speed)):
                with contextlib.suppress(RigTimeout, OSError, serial.SerialException):
                    self.ping(timeout=min(COMMAND_TIMEOUT_S, interval))

        self._keepalive = threading.Thread(target=loop, name="rig-keepalive", daemon=True)
        self._keepalive.start()

    def subscribe(self) -> queue.Queue[Telemetry]:
        """A queue of its own that receives every telemetry frame from now on (a recorder beside a UI)."""
        q: queue.Queue[Telemetry] = queue.Queue(maxsize=100_000)
        self._subscribers.append(q)
        return q

    def unsubscribe(self, q: queue.Queue[Telemetry]) -> None:
        with contextlib.suppress(ValueError):
            self._subscribers.remove(q)

    def next_telemetry(self, timeout: float = 2.0) -> Telemetry:
        try:
            return self._telemetry_queue.get(timeout=timeout)
        except queue.Empty as exc:
            raise RigTimeout(f"no telemetry from {self._port} for {timeout:.1f} s") from exc

    def collect_telemetry(self, count: int, timeout: float) -> list[Telemetry]:
        """Every frame queued, once `count` are in or `timeout` s have passed, waiting on the queue (not
        polling it): how a stepped advance's frames are read (on the line already, the reader not yet
        through them)."""
        out: list[Telemetry] = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                out.append(self._telemetry_queue.get(timeout=remaining))
            except queue.Empty:
                break
        return out + self.drain_telemetry()

    def drain_telemetry(self) -> list[Telemetry]:
        out = []
        while True:
            try:
                out.append(self._telemetry_queue.get_nowait())
            except queue.Empty:
                return out
