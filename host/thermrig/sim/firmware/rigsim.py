"""rigsim, the firmware core built for the host: it writes its own pty and handles the serial faults
and resets itself, as messages on the virtual wires (docs/plant.md)."""

from __future__ import annotations

import json
import subprocess

from thermrig.priority import set_process_nice
from thermrig.settings import find_tool
from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError, SimTruth
from thermrig.sim.wires import ClockFault, Reset, SerialFault, TickStall


class Rigsim(Firmware):
    name = "rigsim"

    def __init__(self, ctx: LaunchContext) -> None:
        self.server = ctx.server
        self.clock_follows_plant = not ctx.realtime
        binary = find_tool("rigsim")
        if not binary.exists():
            raise SimError(f"{binary} is missing: build it with `make rigsim` (or set THERMRIG_RIGSIM)")
        cmd = [str(binary), "--plant", ctx.plant_sock, "--ppm", str(ctx.ppm), "--offset-us", str(ctx.offset_us)]
        if ctx.realtime:
            cmd.append("--realtime")
        cmd += ["--link", str(ctx.link)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pid = self.proc.pid
        ctx.server.pace_priority(lambda nice: set_process_nice(nice, pid))  # the plant's priority, as it changes
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        try:
            hello = json.loads(first)
        except json.JSONDecodeError as exc:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            self.close()
            raise SimError(f"rigsim did not start: {first!r} {err}") from exc
        # The port is a symlink that follows the pty across a simulated unplug, as /dev/serial/by-id does.
        self.port = str(ctx.link)
        self.truth = SimTruth(int(hello["t0_unix_us"]), float(hello["ppm"]), int(hello["offset_us"]))

    def reset(self, reset: Reset) -> None:
        self.server.send_raw(reset.line())

    def serial_fault(self, fault: SerialFault) -> None:
        self.server.send_raw(fault.line())

    def clock_fault(self, fault: ClockFault) -> bool:
        self.server.send_raw(fault.line())
        return True

    def tick_stall(self, stall: TickStall) -> bool:
        self.server.send_raw(stall.line())
        return True

    def settle(self) -> None:
        """Nothing to wait for: rigsim writes its frames to the pty before it asks for the next sample."""


def launch(ctx: LaunchContext) -> Firmware:
    return Rigsim(ctx)
