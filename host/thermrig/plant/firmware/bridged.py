"""A firmware whose serial side reaches the host through a SerialBridge (QEMU, MicroPython): the bridge
plays the serial faults, and the MCU reset is a real reboot the plant asks for on the virtual wires."""

from __future__ import annotations

import subprocess
import time

from thermrig.plant.firmware.base import Firmware, LaunchContext, SimError, SimTruth
from thermrig.plant.serial_bridge import SerialBridge

CONNECT_TIMEOUT_S = 15.0


class BridgedFirmware(Firmware):
    """Subclasses build the command line from the bridge's socket and the plant's (`command`)."""

    def __init__(self, ctx: LaunchContext) -> None:
        self.server = ctx.server
        self.bridge = SerialBridge(ctx.link, ctx.workdir / "serial.sock", lambda: ctx.server.plant.t, ctx.realtime)
        ctx.server.hooks.append(self.bridge.on_tick)
        t0_unix_us = time.time_ns() // 1000
        self.proc = subprocess.Popen(
            self.command(ctx, str(self.bridge.sock_path)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            self.bridge.accept(CONNECT_TIMEOUT_S)
        except OSError as exc:
            self.close()
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise SimError(f"{self.name} did not connect its serial port: {err.strip() or exc}") from exc
        self.port = str(ctx.link)
        # The emulated MCU's clock starts with the process; its crystal is exact.
        self.truth = SimTruth(t0_unix_us, 0.0, 0)

    def command(self, ctx: LaunchContext, serial_sock: str) -> list[str]:
        raise NotImplementedError

    def reset(self, cause: int) -> None:
        self.server.reset(cause)

    def serial_fault(self, message: str) -> None:
        self.bridge.fault(message)

    def settle(self) -> None:
        self.bridge.settle()

    def close(self) -> None:
        super().close()
        self.bridge.close()
