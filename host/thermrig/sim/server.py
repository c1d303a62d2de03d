"""PlantServer: serves the virtual wires to the firmware over a Unix socket, paced in one of three ways:
realtime (the firmware paces the ticks by its clock), accelerated (the plant paces at N x real time, or
as fast as possible) and stepped (a test advances virtual time explicitly). A firmware that reboots for
real (QEMU) asks for its boot configuration with `B` and is reset by an `R` answering its request."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

from thermrig.dut.pacing import Pacing
from thermrig.priority import set_thread_nice, thread_nice, world_nice
from thermrig.sim.host_gate import HostGate
from thermrig.sim.plant import Plant
from thermrig.sim.wires import TICK_S, SensorBank, parse_outputs

TickHook = Callable[[Plant], None]
SampleHook = Callable[[int], None]  # the plant time (us) of the sample about to go out to the firmware
# Told when a speed change has taken effect: the new speed (0: as fast as possible) and the host UTC from
# which the firmware's clock runs at it (it has processed the last sample of the old pace by then).
SpeedListener = Callable[[float, float], None]
# Accelerated mode at real time or slower (1x: while fio writes to the virtual drive, whose clock is wall
# time), a plant behind its schedule (the machine was busy) catches up, serving its ticks at up to
# CATCH_UP times its pace until it is back on schedule, so the firmware's clock and the drive's throttle
# keep fio's time; never faster, so a host that had no CPU either is not left seconds of MCU time behind
# (its keepalives still come at least twice per host timeout). Past GIVE_UP_S behind, or at a pace
# faster than real time (no one else's clock to keep, and a host timeout already that many times
# shorter in wall time), the plant re-anchors instead: that time is lost, and its lateness says so.
CATCH_UP = 2.0
GIVE_UP_S = 2.0
MAX_LAG_TICKS = 2  # faster than real time: how far behind its schedule the plant may fall before it re-anchors


class PlantServer:
    def __init__(self, plant: Plant, sensors: SensorBank, sock_path: str, pacing: Pacing):
        self.plant = plant
        self.sensors = sensors
        self.speed = speed = pacing.plant_speed  # None when the firmware paces; N x real time; 0: as fast as possible
        self.stepped = pacing.is_stepped
        self.ticks = 0  # samples served; tick 0 is the initial state at t = 0
        self.requests = 0  # actuator messages received: request n + 1 means sample n was processed
        self.hooks: list[TickHook] = []  # before each tick's step (the drive's power for it)
        self.sample_hooks: list[SampleHook] = []  # after the step, before its sample goes out
        # Lines a firmware takes before each sample besides the wires' own (the board build's bus faults).
        self.board_lines: list[Callable[[], str]] = []
        self.speed_listeners: list[SpeedListener] = []
        self.host_gate = HostGate()  # faster than real time: the plant waits for a host it hears (host_gate.py)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(sock_path)
        self._listener.listen(1)
        self._conn: socket.socket | None = None
        self._allowed = 0
        self._reset: int | None = None  # a reset cause to answer the firmware's next request with
        self._boot_cause = 0
        self._replacing = threading.Event()
        self._cond = threading.Condition()
        self._closed = False
        self._error: BaseException | None = None
        self._pace: tuple[float, int, float | None] = (time.monotonic(), 0, speed)  # anchor: wall time, tick, speed
        self._origin = self._pace  # the anchor as the pace was set: the plant's lateness is counted from it
        self._next_speed: float | None = None  # set_speed's, applied at the next tick served
        self._changed: float | None = None  # a speed applied at the last tick, told once the firmware has it
        self._told = 0  # speed changes told to the listeners so far
        self._worst_late_s = 0.0  # the latest tick behind its schedule since take_worst_late_s()
        self._last_tick = 0.0  # when the last tick was let through (monotonic): the catch-up's pace
        # The outputs the firmware sent after its last sample: what it drives at the plant's present time,
        # which the plant applies over its next step.
        self.driven: tuple[float, float, float] = (0.0, 0.0, 0.0)
        self._host_nice = 0  # the plant thread's niceness as started (its starter's), and the world's
        self._world_nice = world_nice()  # read here: a bad THERMRIG_WORLD_NICE fails the start, not the thread
        self._nice: int | None = None  # the niceness the plant runs at now, once its thread runs
        self._paced: list[Callable[[int], None]] = []  # each sets what the plant paces to the plant's niceness
        self._priority_lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="plant", daemon=True)

    def start(self) -> PlantServer:
        """Serve the socket bound in the constructor, on a thread of its own."""
        self._thread.start()
        return self

    def _prioritize(self) -> None:
        """On the plant's thread: at the world's priority while the plant keeps someone else's real time
        (the firmware's own clock, or 1x: fio's on the virtual drive, whose hook runs on this thread),
        at the host's otherwise: faster than real time a raised plant would only leave a late host
        further behind in MCU time, and stepped or as fast as possible it keeps no time, while a raised
        firmware running flat out would starve the host (priority.py). What the plant paces follows."""
        keeps_real_time = not self.stepped and (self.speed is None or self.speed == 1)
        nice = self._world_nice if keeps_real_time else self._host_nice
        with self._priority_lock:
            set_thread_nice(nice)
            self._nice = nice
            for follow in self._paced:
                follow(nice)

    def pace_priority(self, follow: Callable[[int], None]) -> None:
        """Something the plant paces (a firmware's process, a serial bridge's relay), given as the call
        that sets its niceness (priority.set_process_nice or set_thread_nice with its id bound): it runs at
        the plant's priority from now on, following it as the pace changes."""
        with self._priority_lock:
            self._paced.append(follow)
            if self._nice is not None:
                follow(self._nice)

    def _serve(self) -> None:
        self._host_nice = thread_nice()
        self._prioritize()
        try:
            self._listener.settimeout(30)
            while True:
                conn, _ = self._listener.accept()
                with self._cond:
                    self._conn = conn
                    self.requests = self.ticks  # a new firmware: no request of the old one is pending
                    self._cond.notify_all()
                self._pace = self._origin = (time.monotonic(), self.ticks, self.speed)
                try:
                    served = self._serve_connection(conn)
                except OSError:
                    if not self._replacing.is_set():
                        raise
                    served = True  # the old firmware went away mid-message: it is being replaced
                if not served or not self._replacing.is_set():
                    return
                conn.close()
        except (OSError, ValueError) as exc:
            if not self._closed:
                self._error = exc
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()

    def _serve_connection(self, conn: socket.socket) -> bool:
        """Serve one firmware until it disconnects (True) or the simulation closes (False)."""
        reader = conn.makefile("r", encoding="ascii", newline="\n")
        for line in reader:
            if line.startswith("B"):  # a firmware booted: how time runs, and why it restarted
                conn.sendall(f"M {int(self.speed is None)} {self._boot_cause}\n".encode("ascii"))
                continue
            if line.startswith("C "):  # the firmware's channel table, before its first outputs
                self.sensors.wire_channel_map(line[2:].strip())
                continue
            heater, fan0, fan1 = self.driven = parse_outputs(line)
            with self._cond:
                self.requests += 1
                self._cond.notify_all()
            if self.ticks > 0 and not self._wait_turn():
                return False
            self._tell_speed()
            self._keep_pace()
            if self._answer_reset(conn):
                continue
            p = self.plant
            p.heater_duty = heater
            p.fan_duty = [fan0, fan1]
            for hook in self.hooks:
                hook(p)
            if self.ticks > 0:
                p.step(TICK_S)
            for sample_hook in self.sample_hooks:
                sample_hook(round(p.t * 1e6))
            extra = "".join(line() for line in self.board_lines)
            conn.sendall((extra + self.sensors.sample_line(TICK_S if self.ticks > 0 else 0.0)).encode("ascii"))
            self.ticks += 1
            self._apply_speed()
        return True

    def _keep_pace(self) -> None:
        """Accelerated mode: wait for this tick's time (the ticks before it and the pace's anchor say when);
        behind it, no sooner than a tick at CATCH_UP times the pace after the last one, or re-anchored (see
        CATCH_UP). Faster than real time, first no further than the host gate lets it (host_gate.py)."""
        t0, n0, speed = self._pace
        if not speed:
            return
        if speed > 1 and self.host_gate.wait(self.plant.t + TICK_S):
            self._pace = self._origin = (time.monotonic(), self.ticks, speed)  # the host's pause, not lateness
            t0, n0, speed = self._pace
        self._note_late()
        now = time.monotonic()
        due = t0 + (self.ticks - n0) * TICK_S / speed
        if due > now:
            time.sleep(due - now)
        elif now - due > (GIVE_UP_S if speed <= 1 else MAX_LAG_TICKS * TICK_S / speed):
            self._pace = (now, self.ticks, speed)
        else:
            soonest = self._last_tick + TICK_S / (speed * CATCH_UP)
            if soonest > now:
                time.sleep(soonest - now)
        self._last_tick = time.monotonic()

    def _note_late(self) -> None:
        """The plant's time behind wall time since its pace was set (caught up, it is back to 0; a
        re-anchoring past GIVE_UP_S does not forgive it: the firmware's clock and the drive's throttle stay
        that far behind fio's clock)."""
        t0, n0, speed = self._origin
        if not speed:
            return
        late = time.monotonic() - (t0 + (self.ticks - n0) * TICK_S / speed)
        with self._cond:
            self._worst_late_s = max(self._worst_late_s, late)

    def take_worst_late_s(self) -> float:
        """How far behind wall time the plant's latest tick since the last call was served: its own record
        of its lateness, counted from when its pace was set (0 when on time, or when the firmware paces in
        real time)."""
        with self._cond:
            worst, self._worst_late_s = self._worst_late_s, 0.0
        return worst

    def _apply_speed(self) -> None:
        """A speed set since the last tick takes effect at the tick just served: the next one comes a tick
        of the new pace after it, so the firmware's clock changes pace exactly at a tick."""
        with self._cond:
            speed, self._next_speed = self._next_speed, None
            if speed is None:
                return
            self.speed = speed
            self._pace = self._origin = (time.monotonic(), self.ticks - 1, speed)  # the tick just served: the anchor
            self._worst_late_s = 0.0  # lateness at the old pace is not the new one's
            self._changed = speed
        self._prioritize()

    def _tell_speed(self) -> None:
        """The firmware has processed the tick the speed changed at (it asks for the next): tell listeners."""
        with self._cond:
            speed, self._changed = self._changed, None
        if speed is None:
            return
        at = time.time()
        for listener in self.speed_listeners:
            try:
                listener(speed, at)
            except Exception as exc:  # a listener's bug must not stop the plant: check() raises it
                self._error = exc
        with self._cond:
            self._told += 1
            self._cond.notify_all()

    @contextlib.contextmanager
    def replacing_firmware(self, timeout: float = 15.0) -> Iterator[None]:
        """While the firmware is swapped for another (a flashed image), its disconnect does not end the
        simulation: the server waits for the next one, whose boot reports a power-on reset. Returns once
        the new firmware is connected."""
        old = self._conn
        self._replacing.set()
        self._boot_cause = 0
        try:
            yield
            with self._cond:
                if not self._cond.wait_for(lambda: self._conn is not old or self._closed, timeout):
                    raise TimeoutError("the new firmware did not connect to the plant")
        finally:
            self._replacing.clear()

    def _answer_reset(self, conn: socket.socket) -> bool:
        """Reset the firmware instead of answering its request: nothing is in flight when it reboots, and
        its first request after boot gets the sample this one would have had."""
        with self._cond:
            if self._reset is None:
                return False
            self._boot_cause, self._reset = self._reset, None
            self.requests -= 1
            if self.stepped and self.ticks > 0:  # give back the turn this request took
                self._allowed += 1
            conn.sendall(f"R {self._boot_cause}\n".encode("ascii"))
            return True

    def reset(self, cause: int) -> None:
        """Reset a firmware that reboots for real: `R <cause>` answers its next request."""
        with self._cond:
            self._reset = cause

    def set_speed(self, speed: float, timeout: float = 5.0) -> None:
        """Accelerated mode: change pace (N x real time; 0 = as fast as possible) at the next tick, and
        return once the firmware runs at it (speed_listeners have been told), or after timeout."""
        if self.speed is None or self.stepped:
            raise RuntimeError("only an accelerated simulation changes speed")
        with self._cond:
            if self._conn is None:  # no firmware yet: the pace starts from now
                self.speed = speed
                self._pace = self._origin = (time.monotonic(), self.ticks, speed)
                return
            self._next_speed = speed
            target = self._told + 1
            self._cond.wait_for(lambda: self._told >= target or self._closed, timeout)

    def _wait_turn(self) -> bool:
        if not self.stepped:
            return not self._closed
        with self._cond:
            while self._allowed <= 0 and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            self._allowed -= 1
            self._cond.notify_all()
            return True

    def advance(self, seconds: float, timeout: float = 60.0) -> None:
        """Stepped mode: let `seconds` of virtual time pass, and return once the firmware has processed
        the last sample (it has asked for the next one), so its frames are already on the pty."""
        if not self.stepped:
            raise RuntimeError("advance() is for a stepped simulation")
        with self._cond:
            target = self.ticks + round(seconds / TICK_S)
            self._allowed += round(seconds / TICK_S)
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self.requests > target or self._closed, timeout):
                raise TimeoutError(f"the simulation did not advance {seconds} s within {timeout} s")
        self.check()

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Wait until the firmware has processed the initial sample."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.requests >= 2 or self._closed, timeout):
                raise TimeoutError("the firmware did not start exchanging with the plant")
        self.check()

    def check(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"plant server failed: {self._error}") from self._error

    def send_raw(self, line: str) -> None:
        """Out-of-band message to the firmware (rigsim: "R 0" resets the MCU at once)."""
        if self._conn is None:
            raise RuntimeError("the firmware is not connected")
        self._conn.sendall(line.encode("ascii"))

    def host_wrote(self) -> None:
        """The host wrote a frame to the firmware (its link's send listener): the gate hears it now."""
        self.host_gate.heard(self.plant.t)

    def close(self) -> None:
        self._closed = True
        self.host_gate.close()
        with self._cond:
            self._cond.notify_all()
        for s in (self._conn, self._listener):
            if s is not None:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
