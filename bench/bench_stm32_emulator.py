"""The real Nucleo-F411RE image in LabWired's STM32F411 emulator (make firmware-emulator): wall and CPU
seconds per simulated second, over the boot, the HELLO and one control tick (BENCH_STM32_TICKS more)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from common import figure

from thermrig.protocol.frame import PROTO_VERSION
from thermrig.settings import find_tool
from thermrig.sim.stm32_emulator import NucleoEmulator, unavailable

OVERLAY = Path(__file__).resolve().parents[1] / "firmware" / "zephyr" / "boards" / "nucleo_f411re.overlay"
TICKS = int(os.environ.get("BENCH_STM32_TICKS", "1"))


def main() -> int:
    elf = find_tool("stm32-emulator-elf")
    if (reason := unavailable()) is not None or not elf.is_file():
        print(f"  skipped: {reason or f'no image at {elf}: run make firmware-emulator'}")
        return 0
    wall, cpu = time.monotonic(), time.process_time()
    with NucleoEmulator(elf, OVERLAY, thermocouples=1, ambient=True) as emu:
        loaded = time.monotonic() - wall
        emu.frame("TEL", timeout_s=0.02)
        booted = emu.time_s
        emu.send("HELLO", f"proto={PROTO_VERSION}")
        emu.frame("ACK", timeout_s=0.02)
        for _ in range(TICKS):
            emu.frame("TEL", timeout_s=0.2)
        simulated = emu.time_s
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    figure("load the image and the board", f"{loaded:.2f} s", "wall")
    figure("boot to the first telemetry", f"{booted * 1000:.1f} ms", "simulated")
    figure(f"simulated in all (boot, HELLO, {TICKS} control tick(s))", f"{simulated:.3f} s", "")
    figure("wall seconds per simulated second", f"{wall / simulated:.0f}", "real time is 1")
    figure("CPU seconds per simulated second", f"{cpu / simulated:.0f}", "this process, load aside")
    return 0


if __name__ == "__main__":
    sys.exit(main())
