"""The real Nucleo-F411RE image in an STM32F411 emulator (LabWired, the `labwired` package): the board
wired as its overlay says (MAX31855 on SPI1, the SHT31 on I2C1, the link on USART2), driven in virtual
time, with the protocol's frames in and out of its USART.

Execution only advances inside `run_for`/`frame`, so the rig's timeouts are simulated time and the
host waits on nothing real: RigLink's wall-clock timeouts cannot hold here (the emulator runs tens
to hundreds of times slower than real time), so frames go through thermrig.protocol directly.

What LabWired 0.25.0 does not do, and what is done instead (docs/firmware.md, "The Nucleo image in
an STM32 emulator"):
- Its USART sets RXNE for a byte sent to the board but never raises the USART's interrupt: while RXNE
  is set, `send` pends that interrupt in the NVIC (ISPR), as the USART would.
- Its SPI devices answer whatever chip select is low, so every MAX31855 on the bus answers every
  chip select: the board gets one, and all four thermocouples read it.
- Two devices with an input of the same name (the MAX31855's and the SHT31's `temperature`) cannot
  be set one by one: a thermocouple temperature is settable only on a board without the SHT31.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

from thermrig.errors import ThermrigError
from thermrig.protocol.frame import Frame, decode, encode

LABWIRED_VERSION = "0.25.0"  # the release this wiring and its workarounds were measured on
CHIP = "stm32f411ceu6"  # the F411 LabWired models (the Nucleo's F411RE is the same die in 64 pins)
LINK_UART = "usart2"  # the ST-Link virtual COM port
LINK_IRQ = 38  # USART2's interrupt (RM0383 table 37)
USART_SR_RXNE = 0x20
NVIC_ISPR0 = 0xE000E200
CPU_HZ = 96_000_000  # the Nucleo's SYSCLK as Zephyr's clock tree sets it (LabWired's default is 100 MHz)
# The blocks the image touches. The others (USB, SDIO, DMA, the other timers, USARTs, SPIs and I2Cs)
# are left out: each one LabWired models costs time on every cycle, and the image never reaches them.
PERIPHERALS = frozenset(
    {"rcc", "flash_ctrl", "pwr", "systick", "syscfg", "exti", "dbg", "iwdg", "usart2", "spi1", "i2c1", "tim2",
     "tim3", "gpioa", "gpiob", "gpioc", "gpioh"}
)  # fmt: skip
_CS = re.compile(r"&gpio([a-h])\s+(\d+)\s+GPIO_ACTIVE_LOW")
_SHT = re.compile(r"sht3\w*@([0-9a-fA-F]+)")


class EmulatorError(ThermrigError, RuntimeError):
    """The emulator cannot run the image, or the image did not answer as it should in time."""


def unavailable() -> str | None:
    """Why the emulator cannot run here (None: it can)."""
    try:
        import labwired  # noqa: F401
    except ImportError:
        return "the LabWired simulator is not installed (pip install 'thermrig[firmware]' brings labwired)"
    version = dist_version("labwired")
    if version != LABWIRED_VERSION:
        return f"labwired {version} is installed; the emulated board is wired for {LABWIRED_VERSION}"
    return None


@dataclass(frozen=True)
class Wiring:
    """The Nucleo's sensors as its overlay places them: the thermocouples' chip selects (PB6...) and the
    SHT3x's I2C address."""

    chip_selects: tuple[str, ...]
    sht_address: int

    @classmethod
    def from_overlay(cls, overlay: Path) -> Wiring:
        text = overlay.read_text()
        spi = text[text.index("&spi1") :]
        cs_line = spi[spi.index("cs-gpios") : spi.index(";", spi.index("cs-gpios"))]
        chip_selects = tuple(f"P{port.upper()}{pin}" for port, pin in _CS.findall(cs_line))
        sht = _SHT.search(text)
        if not chip_selects or sht is None:
            raise EmulatorError(f"{overlay}: no cs-gpios on &spi1 or no sht3x node: cannot wire the emulator")
        return cls(chip_selects, int(sht[1], 16))


def _chip(packaged: dict[str, Any], catalog: Path) -> dict[str, Any]:
    chip = dict(packaged)
    chip["cpu_hz"] = CPU_HZ
    chip["peripherals"] = [p for p in chip["peripherals"] if p["id"] in PERIPHERALS]
    for p in chip["peripherals"]:
        schema = p.get("config", {}).get("debug_schema")
        if schema:  # relative to the packaged chip file
            p["config"]["debug_schema"] = str((catalog / "chips" / schema).resolve())
    return chip


def _system(chip_file: Path, wiring: Wiring, thermocouples: int, ambient: bool) -> dict[str, Any]:
    devices: list[dict[str, Any]] = [
        {"id": f"tc{i}", "type": "max31855", "connection": "spi1", "config": {"cs_pin": cs}}
        for i, cs in enumerate(wiring.chip_selects[:thermocouples])
    ]
    if ambient:
        devices.append(
            {"id": "ambient", "type": "sht31", "connection": "i2c1", "config": {"i2c_address": wiring.sht_address}}
        )
    return {"name": "thermrig-nucleo-f411re", "chip": str(chip_file), "external_devices": devices, "board_io": []}


@dataclass
class NucleoEmulator:
    """One boot of the image on the emulated Nucleo. `thermocouples` MAX31855 go on SPI1 (at the
    overlay's first chip selects), and the SHT31 on I2C1 if `ambient`. Use as a context manager."""

    elf: Path
    overlay: Path
    thermocouples: int = 1
    ambient: bool = True
    _sim: Any = field(default=None, init=False, repr=False)
    _pending: bytes = field(default=b"", init=False, repr=False)
    _seq: int = field(default=1, init=False, repr=False)

    def start(self) -> NucleoEmulator:
        if (reason := unavailable()) is not None:
            raise EmulatorError(reason)
        if not self.elf.is_file():
            raise EmulatorError(f"no image at {self.elf}: run 'make firmware-emulator'")
        import labwired
        import yaml  # with labwired in the firmware extra

        catalog = Path(labwired.__file__).parent / "configs"
        wiring = Wiring.from_overlay(self.overlay)
        with tempfile.TemporaryDirectory(prefix="thermrig-labwired-") as tmp:
            chip_file, system_file = Path(tmp) / "chip.yaml", Path(tmp) / "system.yaml"
            chip_file.write_text(
                yaml.safe_dump(_chip(yaml.safe_load((catalog / "chips" / f"{CHIP}.yaml").read_text()), catalog))
            )
            system_file.write_text(yaml.safe_dump(_system(chip_file, wiring, self.thermocouples, self.ambient)))
            try:
                self._sim = labwired.Sim(self.elf, system=system_file, uart=LINK_UART)
            except (ValueError, OSError) as exc:
                raise EmulatorError(f"LabWired cannot load {self.elf}: {exc}") from exc
        return self

    def __enter__(self) -> NucleoEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None

    @property
    def time_s(self) -> float:
        """Simulated seconds since reset."""
        return float(self._sim.time)

    def set_input(self, channel: str, value: float) -> None:
        """A device input by LabWired's channel name: `temperature` (the MAX31855's, on a board without
        the SHT31), `internal` (its cold junction), `humidity` (the SHT31's)."""
        try:
            self._sim.set_input(channel, value)
        except ValueError as exc:
            raise EmulatorError(f"cannot set {channel!r}: {exc}") from exc

    def run_for(self, seconds: float) -> None:
        self._sim.run_for(seconds)
        self._pending += self._sim.read_uart_bytes()

    def send(self, type_: str, *args: str) -> int:
        """Send a host frame into the board's USART; its sequence number."""
        seq, self._seq = self._seq, self._seq + 1
        self._sim.send_bytes(encode(seq, type_, args))
        self._deliver()
        return seq

    def _deliver(self) -> None:
        """Raise the USART's interrupt for each byte it holds, as the hardware would (see the module's
        docstring); the image's own ISR reads them."""
        base = self._uart_base()
        for _ in range(4096):
            if not self._sim.read_u32(base) & USART_SR_RXNE:
                return
            self._sim.write_u32(NVIC_ISPR0 + 4 * (LINK_IRQ // 32), 1 << (LINK_IRQ % 32))
            self.run_for(20e-6)
        raise EmulatorError("the image does not read its USART: is its receive interrupt enabled?")

    @staticmethod
    def _uart_base() -> int:
        return 0x40004400  # USART2 (RM0383 section 2.3)

    def frame(self, type_: str, timeout_s: float, step_s: float = 0.002) -> Frame:
        """The next frame of `type_` the board sends within `timeout_s` simulated seconds; the frames
        before it are dropped."""
        deadline = self.time_s + timeout_s
        while True:
            while b"\n" in self._pending:
                line, self._pending = self._pending.split(b"\n", 1)
                frame = decode(line.rstrip(b"\r"))
                if frame.type == type_:
                    return frame
            if self.time_s >= deadline:
                raise EmulatorError(f"no {type_} frame from the image in {timeout_s} s of simulated time")
            self.run_for(step_s)
