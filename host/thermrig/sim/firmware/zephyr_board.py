"""The board build (`make firmware-board`): the Nucleo's own Zephyr HAL (firmware/zephyr/src/rig_hal.c)
on native_sim_64, a host program whose emulated SPI, I2C, GPIO and PWM devices are the plant's. Its link
UART reaches the SerialBridge over one Unix socket, its virtual wires the plant over another; both are
named in its environment (firmware/zephyr/native/plant_bridge.c). Its MCU reset is a real reboot: the
program starts itself afresh, keeping both sockets."""

from __future__ import annotations

from pathlib import Path

from thermrig.settings import find_tool
from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError
from thermrig.sim.firmware.bridged import BridgedFirmware


def board_image() -> Path:
    """The board build's program: $THERMRIG_ZEPHYR_BOARD, else the repository's build."""
    return find_tool("zephyr-board")


def _is_host_elf(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(20)
    return len(head) == 20 and head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") in (3, 62)


PWM_ACTUATORS = ("heater", "fan0", "fan1")  # bit n of the board's "P <hex>" line: actuator n's PWM fails


class ZephyrBoard(BridgedFirmware):
    name = "zephyr-board"
    has_failing_pwm = True

    def __init__(self, ctx: LaunchContext) -> None:
        self.image = ctx.image or board_image()
        if not self.image.exists():
            raise SimError(
                f"{self.image} is missing: build it with `make firmware-board` (or set THERMRIG_ZEPHYR_BOARD)"
            )
        if not _is_host_elf(self.image):
            raise SimError(f"{self.image} is not a native_sim program (a Zephyr build's zephyr/zephyr.exe)")
        if ctx.ppm or ctx.offset_us:
            raise SimError("--ppm and --offset-us simulate rigsim's clock; the emulated MCU keeps its own")
        self.pwm_failing = 0
        ctx.server.board_lines.append(lambda: f"P {self.pwm_failing:X}\n")
        super().__init__(ctx)

    def pwm_error(self, channel: int, failing: bool) -> bool:
        """From the next tick the PWM driver refuses every duty for the actuator (0 heater, 1-2 the fans),
        or works again."""
        bit = 1 << channel
        self.pwm_failing = self.pwm_failing | bit if failing else self.pwm_failing & ~bit
        return True

    def command(self, ctx: LaunchContext, serial_sock: str) -> list[str]:
        env = [f"THERMRIG_SERIAL_SOCK={serial_sock}", f"THERMRIG_PLANT_SOCK={ctx.plant_sock}"]
        return ["env", *env, str(self.image)]


def launch(ctx: LaunchContext) -> Firmware:
    return ZephyrBoard(ctx)
