"""A firmware whose serial side reaches the host through a SerialBridge (QEMU, MicroPython): the bridge
plays the serial faults, and the MCU reset is a real reboot the plant asks for on the virtual wires."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from abc import abstractmethod

from thermrig.priority import set_process_nice, set_thread_nice
from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError, SimTruth
from thermrig.sim.serial_bridge import SerialBridge
from thermrig.sim.wires import Garbage, Reset, SerialFault, Silence

CONNECT_TIMEOUT_S = 15.0


def die_with_parent(cmd: list[str]) -> list[str]:
    """The command, told SIGTERM by the kernel when the simulation's process dies, however it dies (rigsim
    exits when the plant's socket closes; QEMU would keep running). Through util-linux's setpriv, which sets
    it and execs the command (the same pid), not a preexec_fn: that would make subprocess fork() and run
    Python in the child before exec, which is not safe in a process where other threads run (gRPC's)."""
    return ["setpriv", "--pdeathsig", "TERM", *cmd]


class BridgedFirmware(Firmware):
    """Subclasses build the command line from the bridge's socket and the plant's (`command`). With
    `serial_on_stdio`, the firmware's stdin and stdout are its serial line, already connected to the bridge
    (a Pico's USB CDC is its MicroPython's sys.stdin and sys.stdout)."""

    serial_on_stdio = False

    def __init__(self, ctx: LaunchContext) -> None:
        self.server = ctx.server
        # Plant time in whole microseconds, as the samples carry it: replugs and silences end on the tick
        # they are due, as rigsim's do, with no float rounding to push them a tick later.
        clock = lambda: round(ctx.server.plant.t * 1e6)  # noqa: E731
        self.bridge = SerialBridge(ctx.link, ctx.workdir / "serial.sock", clock, ctx.realtime)
        ctx.server.sample_hooks.append(self.bridge.on_sample)
        t0_unix_us = time.time_ns() // 1000
        serial: socket.socket | None = None
        if self.serial_on_stdio:
            serial = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            serial.connect(str(self.bridge.sock_path))  # the bridge listens already: accepted below
        with contextlib.closing(serial) if serial is not None else contextlib.nullcontext():
            self.proc = subprocess.Popen(
                die_with_parent(self.command(ctx, str(self.bridge.sock_path))),
                stdin=serial if serial is not None else subprocess.DEVNULL,
                stdout=serial if serial is not None else subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while True:
            try:
                self.bridge.accept(0.2)
                break
            except TimeoutError:
                if self.proc.poll() is None and time.monotonic() < deadline:
                    continue
                if self.proc.poll() is None:  # hung rather than exited: stop it before reading its words
                    self.proc.kill()
                    self.proc.wait()
                err = self.proc.stderr.read().strip() if self.proc.stderr else ""
                self.close()
                last = err.splitlines()[-1] if err else f"no connection in {CONNECT_TIMEOUT_S:.0f} s"
                raise SimError(f"{self.name} did not start: {last}") from None
        # The firmware and the bridge's relay run at the plant's priority, following its pace (server.py).
        pid, relay = self.proc.pid, self.bridge.relay_thread_id
        ctx.server.pace_priority(lambda nice: set_process_nice(nice, pid))
        if relay is not None:
            ctx.server.pace_priority(lambda nice: set_thread_nice(nice, relay))
        self.port = str(ctx.link)
        # The emulated MCU's clock starts with the process; its crystal is exact.
        self.truth = SimTruth(t0_unix_us, 0.0, 0)

    @abstractmethod
    def command(self, ctx: LaunchContext, serial_sock: str) -> list[str]:
        """The firmware's command line: it connects its serial stream to serial_sock, its wires to the plant."""

    def reset(self, reset: Reset) -> None:
        self.server.reset(int(reset.cause))

    def serial_fault(self, fault: SerialFault) -> None:
        if isinstance(fault, Garbage):
            self.bridge.garbage(fault.toward_host, fault.data)
        elif isinstance(fault, Silence):
            self.bridge.silence(round(fault.seconds * 1000))  # the bridge times in whole ms of plant time
        else:
            self.bridge.unplug(round(fault.seconds * 1000))

    def settle(self) -> None:
        self.bridge.settle()

    def close(self) -> None:
        super().close()
        self.bridge.close()
        if self.bridge.on_sample in self.server.sample_hooks:
            self.server.sample_hooks.remove(self.bridge.on_sample)
