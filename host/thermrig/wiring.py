"""The wiring diagnosis: what a rig's telemetry says about how it is wired, and what to fix. Pure functions
over telemetry frames, each one rule of the decision tree: the heater stays cold at 0 %, every thermocouple
reads the room (open, shorted, unstable, a steady impossible value, far from ambient), the ambient sensor
answers, a held bead raises its own channel and no other, each fan's speed follows its own duty, a latched
fault names its output, and a heater pulse warms the chassis air first. Each returns Findings: what was
measured and what to fix. `rig bringup` turns them into its steps, the conformance `wiring` check joins
them into its failure line; how long each watches is here too, in rig time (any simulation speed)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from thermrig.protocol.channels import ChannelKind, ChannelMap
from thermrig.protocol.messages import ChannelStatus, Fault, Telemetry, flag_names

AIR = "chassis_air"
HEATER_OFF_WATCH_S = 10.0  # the heater at 0 %: the chassis air must not warm over this long ...
HEATER_OFF_RISE_C = 0.75  # ... by this much (a heater full on from power-up: +1.25 °C by 10 s)
ROOM_WATCH_S = 3.0  # the thermocouples at room temperature are judged over this long
ROOM_BAND_C = 3.0  # every thermocouple within this of the ambient sensor with the rig cold
UNSTABLE_C = 2.0  # a cold rig's bead that spreads this much over ROOM_WATCH_S reads garbled bits
BASELINE_S = 2.0  # a channel's baseline before a touch or a heater pulse: its mean over this long
TOUCH_RISE_C = 2.0  # a held bead rises at least this over its baseline ...
TOUCH_WAIT_S = 20.0  # ... within this long
SETTLE_C = 1.0  # after letting go, every bead back within this of its baseline ...
SETTLE_WAIT_S = 30.0  # ... within this long (then the next bead)
FAN_SPIN_S = 6.0  # a fan's speed settles (spin-up about 1.5 s) after the frame that shows its new duty
FAN_LOW_PCT, FAN_HIGH_PCT = 40, 100  # each fan at the low duty with the others full, then the other way
FAN_FOLLOWS = 1.2  # a fan follows its duty when its speed at full is this many times its speed at low
PULSE_TARGET_C = 5.0  # the heater pulse aims the air this far over its baseline ...
PULSE_RISE_C = 1.0  # ... and the first channel to rise this much must be the chassis air ...
PULSE_MAX_S = 40.0  # ... within this long
WIRING = ChannelStatus.OPEN | ChannelStatus.SHORT_GND | ChannelStatus.SHORT_VCC  # a bead's wiring faults
UNREADABLE = WIRING | ChannelStatus.JUMP | ChannelStatus.RANGE  # a bead that reads so tells nothing touched


@dataclass(frozen=True)
class Finding:
    """What a rule measured and, when it found a fault, what to fix ("" when it found none)."""

    measured: str
    fix: str = ""

    @property
    def fault(self) -> bool:
        return bool(self.fix)

    def __str__(self) -> str:
        return f"{self.measured}: {self.fix}" if self.fix else self.measured


def mean(frames: list[Telemetry], name: str) -> float:
    return statistics.fmean(f.named(name).value for f in frames)


def thermocouples(frame: Telemetry) -> list[str]:
    return [c.name for c in frame.channels.of_kind(ChannelKind.THERMOCOUPLE)]


def last_seconds(frames: list[Telemetry], seconds: float) -> list[Telemetry]:
    """The frames of the last `seconds` of rig time."""
    start = frames[-1].uptime_ms - seconds * 1000
    return [f for f in frames if f.uptime_ms > start]


def heater_off(frames: list[Telemetry]) -> Finding | None:
    """With the heater at 0 % the chassis air must not warm: one that does is driven full at 0 %, the
    safe state included (its PWM declared inverted, or a welded switch). None when the air bead does not
    read steadily (the room rules say why)."""
    if any(f.named(AIR).status for f in frames):
        return None
    commanded = max(f.heater_pct for f in frames)
    first, last = mean(frames[:5], AIR), mean(frames[-5:], AIR)
    stuck = any(Fault.HEATER_STUCK in f.faults for f in frames)
    measured = f"heater at {commanded:.0f} %: chassis air {first:.1f} -> {last:.1f} °C in {HEATER_OFF_WATCH_S:g} s"
    if commanded == 0 and (last - first >= HEATER_OFF_RISE_C or stuck):
        fix = (
            "the heater heats at 0 %: its PWM is inverted (check the heater's PWM polarity in the board's"
            " overlay: PWM_POLARITY_NORMAL) or its switch is welded. Switch off the heater supply now;"
            " nothing else is run"
        )
        return Finding(measured + ("; heater stuck-on latched" if stuck else ""), fix)
    return Finding(measured)


@dataclass(frozen=True)
class Room:
    """The thermocouples at room temperature: what was read, the faults found, and the beads that do not
    read (open, shorted, unstable, impossible): touching those tells nothing."""

    measured: str
    findings: list[Finding]
    unreadable: list[str]


def room(frames: list[Telemetry]) -> Room:
    """Every thermocouple over ROOM_WATCH_S with the rig cold, held to the ambient sensor (or, without
    it, to the thermocouples' median)."""
    names = thermocouples(frames[-1])
    amb_ok = all(f.named("ambient_t").ok for f in frames)
    amb = mean(frames, "ambient_t") if amb_ok else statistics.median(mean(frames, n) for n in names)
    reference = "ambient" if amb_ok else "the thermocouples' median (no ambient reading)"
    channels = frames[-1].channels
    bad, far, unstable, silent, absurd = [], [], [], [], []
    for name in names:
        key = channels.key_of(name)
        status = ChannelStatus(0)
        for f in frames:
            status |= f.named(name).status
        values = [f.named(name).value for f in frames]
        statuses = {f.named(name).status & WIRING for f in frames}
        if all(f.named(name).status & ChannelStatus.RANGE for f in frames):
            absurd.append(f"{key} ({name}) reads {mean(frames, name):.1f} °C")
        elif status & ChannelStatus.JUMP or len(statuses) > 1 or max(values) - min(values) >= UNSTABLE_C:
            unstable.append(f"{name} ({key}) {min(values):.1f} to {max(values):.1f} °C, {flag_names(status)}")
        elif status == ChannelStatus.OPEN:
            silent.append((name, key))
        elif status & WIRING:
            bad.append(f"{name} ({key}) {flag_names(status)}")
        elif abs(mean(frames, name) - amb) > ROOM_BAND_C:
            far.append(f"{name} {mean(frames, name):.1f} °C")
    measured = f"{reference} {amb:.1f} °C; " + ", ".join(f"{n} {mean(frames, n):.1f}" for n in names)
    unreadable = [n for n in names if any(f.named(n).status & UNREADABLE for f in frames)]
    found = []
    if unstable:
        found.append(
            Finding(
                "; ".join(unstable),
                "unstable readings with the rig cold (bits that change from read to read): check the SPI clock of"
                " those chips (the MAX31855 takes up to 5 MHz: spi-max-frequency in a Zephyr overlay, the SPI's"
                " baudrate on a Pico) and their SCK and SO wires",
            )
        )
    if absurd:
        found.append(
            Finding(
                f"{'; '.join(absurd)}, no temperature at all, steadily",
                "its word arrives garbled the same way each read: check the SPI mode (0) and the bit order"
                " (MSB first) it is read with",
            )
        )
    if silent:
        others = [n for n in names if n not in unreadable]
        said = ", ".join(f"{key} ({name}) reads {frames[-1].named(name).value:.1f} °C, open" for name, key in silent)
        keys = ", ".join(key for _, key in silent)
        if len(silent) < len(names) or len(names) == 1:
            found.append(
                Finding(
                    f"{said}, while {', '.join(others) or 'no other'} read room temperature",
                    f"check {keys}'s chip select (its wire, and its polarity: active low), its SPI mode (0) and"
                    " then the bead's plug",
                )
            )
        else:  # what the chips share before what each has of its own: one bus in the wrong mode reads all open
            found.append(
                Finding(
                    said,
                    "every thermocouple reads open: check first what they share: the SPI mode (0) they are read"
                    " with, the SCK and SO wires and the chips' 3.3 V; then each chip select and bead plug",
                )
            )
    if bad:
        found.append(
            Finding(
                "; ".join(bad),
                "check that thermocouple's plug and its MAX31855's wiring (an open bead or a lead shorted to"
                " ground or 3.3 V)",
            )
        )
    if far:
        found.append(
            Finding(
                ", ".join(far),
                f"more than {ROOM_BAND_C:g} °C from {reference} with the rig cold: a reversed thermocouple lead"
                " or a bead on something warm",
            )
        )
    return Room(measured, found, unreadable)


def ambient(frame: Telemetry) -> Finding:
    """The ambient sensor (an SHT3x on I2C) must answer."""
    r = frame.named("ambient_t")
    measured = f"ambient {r.value:.1f} °C, {frame.humidity.value:.0f} % RH ({flag_names(r.status)})"
    if r.status & ChannelStatus.NO_DATA:
        return Finding(
            measured,
            "the SHT31 does not answer: check SDA/SCL, its 3.3 V, address 0x44 and the bus clock (it takes up"
            " to 1 MHz); a firmware that reads it sooner than 15 ms after starting a measurement gets no answer"
            " either",
        )
    return Finding(measured)


def baseline(frames: list[Telemetry], names: list[str]) -> dict[str, float]:
    return {n: mean(frames, n) for n in names}


def risen(frame: Telemetry, base: dict[str, float], by_c: float) -> list[str]:
    """The channels of `base` that read `by_c` or more over it in this frame."""
    return [n for n in base if frame.named(n).value - base[n] >= by_c]


def settled(frame: Telemetry, base: dict[str, float]) -> bool:
    """Every channel of `base` back within SETTLE_C of it (a touched bead let go)."""
    return all(frame.named(n).value - base[n] < SETTLE_C for n in base)


def touch(channels: ChannelMap, name: str, base: dict[str, float], rose: Telemetry | None) -> Finding:
    """The bead `name` held: `rose` is the first frame in which any channel of `base` (those that read)
    rose TOUCH_RISE_C, None when none did within TOUCH_WAIT_S. Its own channel must rise, no other."""
    key_of = channels.key_of
    up = [] if rose is None else risen(rose, base, TOUCH_RISE_C)
    if rose is None or not up:
        return Finding(
            f"no channel rose {TOUCH_RISE_C:g} °C in {TOUCH_WAIT_S:g} s",
            f"is the {name} bead attached and was it held? check {key_of(name)}'s thermocouple and MAX31855",
        )
    if up == [name]:
        return Finding(f"{name} ({key_of(name)}) rose {rose.named(name).value - base[name]:+.1f} °C")
    others = [n for n in up if n != name]
    shown = ", ".join(f"{n} ({key_of(n)})" for n in others)
    return Finding(
        f"the {name} bead raised {shown}" + (f" and {name}" if name in up else ""),
        f"the chip selects of {key_of(name)} and {', '.join(key_of(n) for n in others)} are swapped: "
        "check the MAX31855 CS wires against the wiring table (hardware/README.md)",
    )


def fan_speed(frames: list[Telemetry], key: str) -> float:
    """A fan's settled speed: its mean over the last second of telemetry."""
    return statistics.fmean(f.rpm[key].value for f in frames[-10:])


def fan(i: int, low: float, high: float) -> Finding:
    """fan{i}'s speed at FAN_LOW_PCT with the others full, and at FAN_HIGH_PCT with the others at the low
    duty: it must rise. One that falls is read from another fan's tach (PWM and tach from different fans)."""
    measured = (
        f"fan{i} {low:.0f} rpm at {FAN_LOW_PCT} %, {high:.0f} rpm at {FAN_HIGH_PCT} % (the other fans the other way)"
    )
    if high <= 0:
        return Finding(measured, f"no tach pulses: check fan{i}'s tach wire and its pull-up")
    if low > high * FAN_FOLLOWS:
        return Finding(measured, f"fan{i}'s speed follows another fan: its PWM and tach wires are from different fans")
    if not high > low * FAN_FOLLOWS:
        return Finding(
            measured,
            f"fan{i} does not follow its duty: its PWM reaches no fan or comes at a frequency the fan ignores:"
            f" check fan{i}'s PWM channel and its wire (a 4-wire fan runs full with its PWM input open) and the"
            " PWM's frequency (a 4-wire fan takes 21-28 kHz, PWM_HZ(25000); outside that it runs full)",
        )
    return Finding(measured)


REFUSED_PWM = (
    "the PWM driver refuses an output's duty: check each PWM's channel and frequency in the board's overlay"
    " against its timer (the heater's 1 kHz needs the 32-bit TIM2; the Nucleo's fan timer is 16-bit at 96 MHz:"
    " 1465 Hz at the least; fans take 25 kHz, PWM_HZ(25000))"
)


def refused_pwm(frame: Telemetry) -> Finding | None:
    """An output whose duty the PWM driver refused latches OUTPUT_ERROR."""
    if Fault.OUTPUT_ERROR in frame.faults:
        return Finding(f"{flag_names(frame.faults)} latched", REFUSED_PWM)
    return None


def stalled_fans(frame: Telemetry) -> dict[int, Finding]:
    """The fans that stand still at full duty (FAN_STALL latched, by fan index): the firmware's safe state
    runs every fan full, and a fan that stands still at full duty latches it. The stall stays latched while
    the fan stands, so its cause cannot be narrowed down by trying another duty."""
    found = {}
    for i, key in enumerate(frame.rpm):
        if Fault.FAN_STALL in frame.faults and frame.rpm[key].status & ChannelStatus.STALL:
            found[i] = Finding(
                f"fan{i} 0 rpm at 100 %: FAN_STALL latched",
                f"fan{i} stands still at full duty: its PWM is inverted (PWM_POLARITY_NORMAL in the board's"
                " overlay; full duty stops an inverted fan, the safe state's too), the fan is seized, or its tach"
                " wire or pull-up is missing",
            )
    return found


def latched_fault(frame: Telemetry) -> Finding | None:
    """A fault latched before the heater pulse: it holds the heater off, so the pulse would tell nothing."""
    if frame.faults:
        return Finding(
            f"a fault is latched: {flag_names(frame.faults)}",
            "clear it (`thermrig rig clear`) once its cause is fixed, then run the bring-up again",
        )
    return None


def heater_pulse(base: dict[str, float], first: Telemetry | None) -> Finding:
    """The heater on toward the air's baseline + PULSE_TARGET_C: `first` is the first frame in which any
    channel of `base` rose PULSE_RISE_C, None when none did within PULSE_MAX_S. It must be the chassis
    air alone: the heater heats, and it heats the air first."""
    up = [] if first is None else risen(first, base, PULSE_RISE_C)
    if first is None or not up:
        return Finding(
            f"nothing rose {PULSE_RISE_C:g} °C in {PULSE_MAX_S:g} s of heat",
            "the heater does not heat: its PWM may reach no heater: check the heater's PWM channel (the timer"
            " output its switch is wired to) and a frequency the switch follows: 1 kHz at most; then its supply,"
            " the thermal fuse and the switch on the heater pin",
        )
    measured = f"first to rise: {', '.join(up)} (+{max(first.named(n).value - base[n] for n in up):.1f} °C)"
    if up == [AIR]:
        return Finding(measured)
    return Finding(
        measured,
        f"the heater warms another bead before the chassis air: aim it at the air and keep the {AIR} bead"
        " in the airflow between heater and slot, away from the drive",
    )
