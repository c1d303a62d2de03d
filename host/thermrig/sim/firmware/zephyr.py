"""The Zephyr firmware built for qemu_cortex_m3 (`make firmware-qemu`), run in Debian's qemu-system-arm:
uart0 carries the rig protocol (through the SerialBridge), uart1 the virtual wires to the plant."""

from __future__ import annotations

from pathlib import Path

from thermrig.settings import find_tool
from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError
from thermrig.sim.firmware.bridged import BridgedFirmware

QEMU = "qemu-system-arm"
EM_ARM = 40  # ELF e_machine of ARM images


def zephyr_image() -> Path:
    """The emulated board's image: $THERMRIG_ZEPHYR_ELF, else the repository's build."""
    return find_tool("zephyr-elf")


def _is_arm_elf(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(20)
    return len(head) == 20 and head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == EM_ARM


class ZephyrQemu(BridgedFirmware):
    name = "zephyr"

    def __init__(self, ctx: LaunchContext) -> None:
        self.image = ctx.image or zephyr_image()
        if not self.image.exists():
            raise SimError(f"{self.image} is missing: build it with `make firmware-qemu` (or set THERMRIG_ZEPHYR_ELF)")
        if not _is_arm_elf(self.image):  # QEMU would run anything else as raw code, silently
            raise SimError(f"{self.image} is not an ARM ELF image (a Zephyr build's zephyr/zephyr.elf)")
        if not find_tool(QEMU).exists():
            raise SimError(f"{QEMU} is not installed: `apt-get install qemu-system-arm` (make setup does)")
        if ctx.ppm or ctx.offset_us:
            raise SimError("--ppm and --offset-us simulate rigsim's clock; the emulated MCU keeps its own")
        super().__init__(ctx)

    def command(self, ctx: LaunchContext, serial_sock: str) -> list[str]:
        machine = ["-machine", "lm3s6965evb", "-nographic", "-monitor", "none", "-kernel", str(self.image)]
        return [QEMU, *machine, "-serial", f"unix:{serial_sock}", "-serial", f"unix:{ctx.plant_sock}"]


def launch(ctx: LaunchContext) -> Firmware:
    return ZephyrQemu(ctx)
