"""Fault injection into the simulated rig at run time: sensors, actuators, the serial line, the MCU
and the room. Each fault is what a real rig can suffer; docs/safety.md says how the firmware reacts."""

from __future__ import annotations

from dataclasses import dataclass

from thermrig.dut.faults import FaultKind
from thermrig.protocol.messages import Fault
from thermrig.sim.firmware.base import Firmware
from thermrig.sim.plant import Plant
from thermrig.sim.sensors import MAX31855_OC, MAX31855_SCG, MAX31855_SCV
from thermrig.sim.wires import ClockFault, Garbage, Reset, SensorBank, Silence, TickStall, Unplug

# Faults that stay until cleared; the others are events.
PERSISTENT = {
    FaultKind.TC_OPEN,
    FaultKind.TC_SHORT_GND,
    FaultKind.TC_SHORT_VCC,
    FaultKind.TC_STUCK,
    FaultKind.TC_NOISY,
    FaultKind.SPI_ALL_ONES,
    FaultKind.SPI_ALL_ZEROS,
    FaultKind.CS_STUCK,
    FaultKind.PWM_ERROR,
    FaultKind.AMBIENT_MISSING,
    FaultKind.AMBIENT_CRC,
    FaultKind.HEATER_STUCK_ON,
    FaultKind.HEATER_OPEN,
    FaultKind.FAN_STALL,
    FaultKind.TACH_MISSING,
    FaultKind.CLOCK_DRIFT,
}
# What the bus reads for a thermocouple whose chip does not drive MISO: on every firmware, the word the
# HAL gets from its SPI read. A chip select stuck low is the plant's too (SensorBank.hold_chip_select).
_BUS_WORDS = {FaultKind.SPI_ALL_ONES: 0xFFFFFFFF, FaultKind.SPI_ALL_ZEROS: 0x00000000}
_TC_BITS = {FaultKind.TC_OPEN: MAX31855_OC, FaultKind.TC_SHORT_GND: MAX31855_SCG, FaultKind.TC_SHORT_VCC: MAX31855_SCV}
GARBAGE = bytes(range(256))[::7] + b"\n\x00\xff*ZZ 12 SET air=9*0000\n" + b"A" * 260 + b"\n"  # < 512 B


class FaultError(ValueError):
    """A fault that cannot be injected as asked."""


@dataclass(frozen=True)
class Injection:
    kind: FaultKind
    channel: int = 0
    value: float | None = None

    def describe(self) -> str:
        extra = f" value={self.value:g}" if self.value is not None else ""
        return f"{self.kind.value} channel={self.channel}{extra}"


class FaultInjector:
    """Applies and clears faults on a running simulation."""

    def __init__(self, plant: Plant, sensors: SensorBank, firmware: Firmware) -> None:
        self.plant = plant
        self.sensors = sensors
        self.firmware = firmware  # serial faults and resets go through whichever firmware runs
        self.active: list[Injection] = []

    def refusal(self, kind: FaultKind) -> str | None:
        """Why this firmware cannot be given a fault of this kind at all, or None where it can (asked before
        a check heats the rig for a fault it would only then find it cannot inject)."""
        if kind is FaultKind.PWM_ERROR and not self.firmware.has_failing_pwm:
            return (
                f"{kind}: the {self.firmware.name} firmware has no PWM driver that can fail "
                "(the board build, micropython-pico and micropython-rp2040 have)"
            )
        return None

    def inject(self, kind: FaultKind | str, channel: int = 0, value: float | None = None) -> Injection:
        kind = FaultKind(kind)
        inj = Injection(kind, channel, value)
        s, p = self.sensors, self.plant
        on_tc = kind.value.startswith("tc-") or kind in _BUS_WORDS or kind is FaultKind.CS_STUCK
        if on_tc and not 0 <= channel < len(s.tc_faults):
            raise FaultError(f"{kind}: thermocouple channel {channel} does not exist (0-{len(s.tc_faults) - 1})")
        if kind in (FaultKind.FAN_STALL, FaultKind.TACH_MISSING, FaultKind.SERIAL_GARBAGE) and channel not in (0, 1):
            raise FaultError(f"{kind}: channel must be 0 or 1")
        if kind in _TC_BITS:
            s.tc_faults[channel] |= _TC_BITS[kind]
        elif kind in _BUS_WORDS:
            s.tc_bus_word[channel] = _BUS_WORDS[kind]
        elif kind is FaultKind.CS_STUCK:
            s.hold_chip_select(channel)
        elif kind is FaultKind.TC_STUCK:
            s.tc_stuck[channel] = value if value is not None else s.true_channels()[channel]
        elif kind is FaultKind.TC_NOISY:
            s.tc_extra_noise[channel] = value if value is not None else 4.0
        elif kind is FaultKind.AMBIENT_MISSING:
            s.ambient = "missing"
        elif kind is FaultKind.AMBIENT_CRC:
            s.ambient = "crc"
        elif kind is FaultKind.AMBIENT_CRC_TEMP:
            s.ambient = "crc-temp"
        elif kind is FaultKind.HEATER_STUCK_ON:
            p.heater_fault = "stuck-on"
        elif kind is FaultKind.HEATER_OPEN:
            p.heater_fault = "open"
        elif kind is FaultKind.FAN_STALL:
            p.fans[channel].stalled = True
        elif kind is FaultKind.TACH_MISSING:
            s.tach_missing[channel] = True
        elif kind is FaultKind.PWM_ERROR:
            if channel not in (0, 1, 2):
                raise FaultError(f"{kind}: channel must be 0 (heater), 1 (fan0) or 2 (fan1)")
            refused = self.refusal(kind)
            if refused is not None or not self.firmware.pwm_error(channel, True):
                raise FaultError(refused or f"{kind}: the {self.firmware.name} firmware refused it")
        elif kind is FaultKind.SERIAL_GARBAGE:
            self.firmware.serial_fault(Garbage(GARBAGE, toward_host=channel == 1))
        elif kind is FaultKind.SERIAL_SILENCE:
            self.firmware.serial_fault(Silence(value if value is not None else 5.0))
        elif kind is FaultKind.USB_UNPLUG:
            self.firmware.serial_fault(Unplug(value if value is not None else 2.0))
        elif kind is FaultKind.MCU_RESET:
            self.firmware.reset(Reset())
        elif kind is FaultKind.WATCHDOG_RESET:
            self.firmware.reset(Reset(Fault.WATCHDOG))  # the cause a watchdog reset reports
        elif kind is FaultKind.ROOM_STEP:
            p.room_c += value if value is not None else 5.0
        elif kind in (FaultKind.CLOCK_JUMP, FaultKind.CLOCK_DRIFT):
            self._clock(kind, value)
        elif kind is FaultKind.TICK_STALL:
            self._stall(value if value is not None else 300.0)
        if kind in PERSISTENT:
            self.active.append(inj)
        return inj

    def _clock(self, kind: FaultKind, value: float | None) -> None:
        if kind is FaultKind.CLOCK_JUMP:
            ms = value if value is not None else 20.0
            fault = ClockFault(jump_s=ms / 1000)
            if not ms > 0:
                raise FaultError(f"{kind}: the uptime jumps forward only (a positive --value in ms)")
        else:
            ppm = round(value) if value is not None else 2000
            fault = ClockFault(ppm=ppm)
            if not 0 < ppm <= 100_000:
                raise FaultError(f"{kind}: the clock runs fast by 1 to 100000 ppm, not {ppm}")
        if not self.firmware.clock_fault(fault):
            raise FaultError(f"{kind}: the {self.firmware.name} firmware keeps a clock of its own (rigsim's can fail)")

    def _stall(self, ms: float) -> None:
        if not ms > 0:
            raise FaultError(f"{FaultKind.TICK_STALL}: the stall lasts a positive --value in ms")
        if not self.firmware.tick_stall(TickStall(ms / 1000)):
            raise FaultError(
                f"{FaultKind.TICK_STALL}: the {self.firmware.name} firmware runs its own loop (rigsim's can stall)"
            )

    def clear(self) -> None:
        """Remove every persistent fault: sensors read true again, actuators work again."""
        s, p = self.sensors, self.plant
        s.tc_faults = [0] * len(s.tc_faults)
        s.tc_stuck = [None] * len(s.tc_stuck)
        s.tc_extra_noise = [0.0] * len(s.tc_extra_noise)
        s.tc_bus_word = [None] * len(s.tc_bus_word)
        s.cs_stuck = None
        for inj in self.active:
            if inj.kind is FaultKind.PWM_ERROR:
                self.firmware.pwm_error(inj.channel, False)
            if inj.kind is FaultKind.CLOCK_DRIFT:
                self.firmware.clock_fault(ClockFault(ppm=0))
        s.ambient = "ok"
        s.tach_missing = [False] * len(s.tach_missing)
        p.heater_fault = None
        for fan in p.fans:
            fan.stalled = False
        self.active.clear()
