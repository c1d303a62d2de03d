"""The Pico's own MicroPython firmware, hal_pico.py included, on MicroPython's unix port: `main.py` runs
as on a Pico, with `machine` and `time` from firmware/micropython/sim_machine, a simulated RP2040 whose
SPI0, I2C0, GPIOs, PWM slices and watchdog are wired to the plant (docs/micropython.md). Its serial line,
USB CDC on a Pico, is the process's stdin and stdout, connected to the SerialBridge."""

from __future__ import annotations

import shutil

from thermrig.firmware_identity import checkout_version
from thermrig.firmware_identity import micropython_firmware_dir as firmware_dir
from thermrig.firmware_identity import stamp_micropython_version as stamp_version
from thermrig.sim.firmware.base import Firmware, LaunchContext
from thermrig.sim.firmware.bridged import BridgedFirmware
from thermrig.sim.firmware.micropython import announced_clock, installed_binary


class MicroPythonPico(BridgedFirmware):
    name = "micropython-pico"
    has_failing_pwm = True
    serial_on_stdio = True

    def __init__(self, ctx: LaunchContext) -> None:
        self.binary = installed_binary("the simulated Pico")
        self.clock_follows_plant = not ctx.realtime
        # The board's filesystem: the firmware folder (ctx.image: another one, as a flash would copy it).
        self.board_dir = ctx.workdir / "micropython-pico"
        shutil.rmtree(self.board_dir, ignore_errors=True)  # a restart (reflash) starts from a clean board
        source = ctx.image or firmware_dir()
        shutil.copytree(source, self.board_dir, ignore=shutil.ignore_patterns("__pycache__", "sim_machine"))
        # The board itself (sim_machine: machine, time, the RP2040 and its wiring) is not the firmware's.
        shutil.copytree(firmware_dir() / "sim_machine", self.board_dir / "sim_machine")
        stamp_version(self.board_dir, checkout_version())
        super().__init__(ctx)
        # hal_pico's uptime starts at 0 when the clock first runs (the board announces when).
        self.truth = announced_clock(self, "the simulated Pico")

    def pwm_error(self, channel: int, failing: bool) -> bool:
        self.server.send_raw(f"P {channel} {int(failing)}\n")  # the board's machine.PWM raises OSError
        return True

    def command(self, ctx: LaunchContext, serial_sock: str) -> list[str]:
        runner = str(self.board_dir / "sim_machine" / "pico_sim.py")
        clock = ["--ppm", str(ctx.ppm), "--offset-us", str(ctx.offset_us)]
        return [str(self.binary), runner, "--plant", ctx.plant_sock, *clock]


def launch(ctx: LaunchContext) -> Firmware:
    return MicroPythonPico(ctx)
