"""The bring-up's phases, in order: the heater stays cold at 0 % (a heater driven by an inverted PWM heats
from power-up, and nothing else is run then), thermocouples at room temperature, the ambient sensor, a
touch of each bead (its own channel must rise, no other), each fan and its tach, and, with the operator's
go-ahead, a short heater pulse that must warm the chassis air first. Every wait is in rig time (any
simulation speed); each phase gives one Step: PASS or FAIL, what it measured, and what to fix, or NOT RUN
with the earlier step's finding that keeps it from meaning anything (a latched fault holds the fans at
full and the heater off, a bead that reads open cannot be touched)."""

from __future__ import annotations

import contextlib
import queue
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from thermrig.bringup.operator import Operator
from thermrig.link.frames import newest
from thermrig.link.rig_link import RigLink
from thermrig.protocol.channels import ChannelKind
from thermrig.protocol.messages import ChannelStatus, Fault, Telemetry, flag_names

ROOM_BAND_C = 3.0  # every thermocouple within this of the ambient sensor at power-up
TOUCH_RISE_C = 2.0  # a held bead rises at least this over its baseline ...
TOUCH_WAIT_S = 20.0  # ... within this long
SETTLE_WAIT_S = 30.0  # after letting go, back within 1 °C of the baseline (then the next bead)
FAN_SPIN_S = 6.0  # a fan's speed settles (spin-up about 1.5 s) after the frame that shows its new duty
APPLY_WAIT_S = 5.0  # a duty the rig was sent shows in its telemetry within this (then measured anyway)
PULSE_RISE_C = 1.0  # the heater pulse: the first channel to rise this much must be chassis air
PULSE_MAX_S = 40.0
AIR = "chassis_air"
HEATER_OFF_WATCH_S = 10.0  # the heater at 0 %: the chassis air must not warm over this long ...
HEATER_OFF_RISE_C = 0.75  # ... by this much (a heater full on from power-up: +1.25 °C by 10 s)
UNSTABLE_C = 2.0  # a cold rig's bead that spreads this much over the room step's 3 s reads garbled bits


@dataclass(frozen=True)
class Step:
    name: str
    passed: bool | None  # None: not run (the operator declined, or an earlier step's finding stops it)
    measured: str
    fix: str = ""

    @property
    def verdict(self) -> str:
        return {True: "PASS", False: "FAIL", None: "SKIP"}[self.passed]


def not_run(name: str, why: str) -> Step:
    return Step(name, None, f"not run: {why}")


class Frames:
    """The rig's telemetry from a subscription, in rig time."""

    def __init__(self, link: RigLink) -> None:
        self.link = link
        self.q = link.subscribe()
        self.last: Telemetry = self.next()

    def next(self) -> Telemetry:
        try:
            self.last = self.q.get(timeout=10)
        except queue.Empty as exc:
            raise TimeoutError("no telemetry from the rig for 10 s") from exc
        return self.last

    def catch_up(self) -> Telemetry:
        """`last` the rig's present (link.frames.newest): called before the operator or the host acts."""
        self.last = newest(self.q, self.last)
        return self.last

    def over(self, seconds: float) -> list[Telemetry]:
        """The frames of the next `seconds` of rig time."""
        end = self.last.uptime_ms + seconds * 1000
        out = []
        while self.last.uptime_ms < end:
            out.append(self.next())
        return out

    def until(self, seconds: float, done: Callable[[Telemetry], bool]) -> Telemetry | None:
        """The first frame within `seconds` for which done() holds, else None."""
        end = self.last.uptime_ms + seconds * 1000
        while self.last.uptime_ms < end:
            if done(tel := self.next()):
                return tel
        return None

    def close(self) -> None:
        self.link.unsubscribe(self.q)


def _mean(frames: list[Telemetry], name: str) -> float:
    return statistics.fmean(f.named(name).value for f in frames)


def thermocouples(frames: Frames) -> list[str]:
    return [c.name for c in frames.last.channels.of_kind(ChannelKind.THERMOCOUPLE)]


def heater_off(frames: Frames) -> Step:
    """With the heater at 0 % the chassis air must not warm: one that does is driven full at 0 %, the
    safe state included (its PWM declared inverted, or a welded switch). Found before anything heats."""
    seen = frames.over(HEATER_OFF_WATCH_S)
    key = frames.last.channels.key_of(AIR)
    if any(f.named(AIR).status for f in seen):
        return not_run("heater off", f"{AIR} ({key}) does not read steadily (the room temperature step says why)")
    commanded = max(f.heater_pct for f in seen)
    first, last = _mean(seen[:5], AIR), _mean(seen[-5:], AIR)
    stuck = any(Fault.HEATER_STUCK in f.faults for f in seen)
    measured = f"heater at {commanded:.0f} %: chassis air {first:.1f} -> {last:.1f} °C in {HEATER_OFF_WATCH_S:g} s"
    if commanded == 0 and (last - first >= HEATER_OFF_RISE_C or stuck):
        fix = (
            "the heater heats at 0 %: its PWM is inverted (check the heater's PWM polarity in the board's"
            " overlay: PWM_POLARITY_NORMAL) or its switch is welded. Switch off the heater supply now;"
            " nothing else is run"
        )
        return Step("heater off", False, measured + ("; heater stuck-on latched" if stuck else ""), fix)
    return Step("heater off", True, measured)


def room(frames: Frames) -> tuple[Step, list[str]]:
    """The room step, and the thermocouples it found unreadable (open, shorted or unstable): touching
    those tells nothing."""
    seen = frames.over(3.0)
    names = thermocouples(frames)
    amb_ok = all(f.named("ambient_t").ok for f in seen)
    # Without the ambient sensor (its own step says why) the beads are held to their median instead.
    amb = _mean(seen, "ambient_t") if amb_ok else statistics.median(_mean(seen, n) for n in names)
    reference = "ambient" if amb_ok else "the thermocouples' median (no ambient reading)"
    bad, far, unstable, silent, absurd = [], [], [], [], []
    wiring = ChannelStatus.OPEN | ChannelStatus.SHORT_GND | ChannelStatus.SHORT_VCC
    for name in names:
        key = frames.last.channels.key_of(name)
        status = ChannelStatus(0)
        for f in seen:
            status |= f.named(name).status
        values = [f.named(name).value for f in seen]
        statuses = {f.named(name).status & wiring for f in seen}
        if all(f.named(name).status & ChannelStatus.RANGE for f in seen):
            absurd.append(f"{key} ({name}) reads {_mean(seen, name):.1f} °C")
        elif status & ChannelStatus.JUMP or len(statuses) > 1 or max(values) - min(values) >= UNSTABLE_C:
            unstable.append(f"{name} ({key}) {min(values):.1f} to {max(values):.1f} °C, {flag_names(status)}")
        elif status == ChannelStatus.OPEN:
            silent.append((name, key))
        elif status & wiring:
            bad.append(f"{name} ({key}) {flag_names(status)}")
        elif abs(_mean(seen, name) - amb) > ROOM_BAND_C:
            far.append(f"{name} {_mean(seen, name):.1f} °C")
    measured = f"{reference} {amb:.1f} °C; " + ", ".join(f"{n} {_mean(seen, n):.1f}" for n in names)
    unusable = wiring | ChannelStatus.JUMP | ChannelStatus.RANGE
    unreadable = [n for n in names if any(f.named(n).status & unusable for f in seen)]
    fixes = []
    if unstable:
        fixes.append(
            f"{'; '.join(unstable)}: unstable readings with the rig cold (bits that change from read to"
            " read): check the SPI clock of those chips (the MAX31855 takes up to 5 MHz:"
            " spi-max-frequency in a Zephyr overlay, the SPI's baudrate on a Pico) and their SCK and SO wires"
        )
    if absurd:
        fixes.append(
            f"{'; '.join(absurd)}, no temperature at all, steadily: its word arrives garbled the same way each"
            " read: check the SPI mode (0) and the bit order (MSB first) it is read with"
        )
    if silent:
        others = [n for n in names if n not in unreadable]
        said = ", ".join(f"{key} ({name}) reads {frames.last.named(name).value:.1f} °C, open" for name, key in silent)
        keys = ", ".join(key for _, key in silent)
        if len(silent) < len(names) or len(names) == 1:
            fixes.append(
                f"{said}, while {', '.join(others) or 'no other'} read room temperature: check {keys}'s chip"
                " select (its wire, and its polarity: active low), its SPI mode (0) and then the bead's plug"
            )
        else:  # what the chips share before what each has of its own: one bus in the wrong mode reads all open
            fixes.append(
                f"{said}: every thermocouple reads open: check first what they share: the SPI mode (0) they are"
                " read with, the SCK and SO wires and the chips' 3.3 V; then each chip select and bead plug"
            )
    if bad:
        fixes.append(
            f"{'; '.join(bad)}: check that thermocouple's plug "
            "and its MAX31855's wiring (an open bead or a lead shorted to ground or 3.3 V)"
        )
    if far:
        fixes.append(
            f"{', '.join(far)}: more than {ROOM_BAND_C:g} °C from "
            f"{reference} with the rig cold: a reversed thermocouple lead or a bead on something warm"
        )
    if fixes:
        return Step("room temperature", False, measured, "; ".join(fixes)), unreadable
    return Step("room temperature", True, measured), unreadable


def ambient(frames: Frames) -> Step:
    r = frames.last.named("ambient_t")
    measured = f"ambient {r.value:.1f} °C, {frames.last.humidity.value:.0f} % RH ({flag_names(r.status)})"
    if r.status & ChannelStatus.NO_DATA:
        return Step(
            "ambient sensor",
            False,
            measured,
            (
                "the SHT31 does not answer: check SDA/SCL, its 3.3 V, address 0x44 and the bus clock"
                " (it takes up to 1 MHz); a firmware that reads it sooner than 15 ms after starting a"
                " measurement gets no answer either"
            ),
        )
    return Step("ambient sensor", True, measured)


def touch(frames: Frames, operator: Operator, name: str, unreadable: tuple[str, ...] = ()) -> Step:
    """The operator holds one bead: its own channel must rise, no other (of those that read at all)."""
    channels = frames.last.channels
    names = [n for n in thermocouples(frames) if n not in unreadable]
    seen = frames.over(2.0)
    base = {n: _mean(seen, n) for n in names}
    frames.catch_up()
    operator.touch(name, channels.key_of(name))
    try:
        rose = frames.until(TOUCH_WAIT_S, lambda f: any(f.named(n).value - base[n] >= TOUCH_RISE_C for n in names))
        risen = [n for n in names if rose is not None and rose.named(n).value - base[n] >= TOUCH_RISE_C]
    finally:
        operator.let_go(name)
    frames.until(SETTLE_WAIT_S, lambda f: all(f.named(n).value - base[n] < 1.0 for n in names))
    key = channels.key_of(name)
    cleared = _stuck_on_cleared(frames) if AIR in risen else ""
    if risen == [name]:
        measured = f"{name} ({key}) rose {rose.named(name).value - base[name]:+.1f} °C"  # type: ignore[union-attr]
        return Step(f"touch {name}", True, measured + cleared)
    if not risen:
        fix = f"is the {name} bead attached and was it held? check {key}'s thermocouple and MAX31855"
        return Step(f"touch {name}", False, f"no channel rose {TOUCH_RISE_C:g} °C in {TOUCH_WAIT_S:g} s", fix)
    others = [n for n in risen if n != name]
    shown = ", ".join(f"{n} ({channels.key_of(n)})" for n in others)
    return Step(
        f"touch {name}",
        False,
        f"the {name} bead raised {shown}" + (f" and {name}" if name in risen else ""),
        f"the chip selects of {key} and {', '.join(channels.key_of(n) for n in others)} are swapped: "
        "check the MAX31855 CS wires against the wiring table (hardware/README.md)",
    )


def _stuck_on_cleared(frames: Frames) -> str:
    """The chassis-air channel warmed with the heater off is what the firmware's heater-stuck-on check
    looks for (2 °C in 20 s): it latches that fault, as it should. Seen within the check's window, it is
    cleared, and the step says so."""
    seen = frames.until(20.0, lambda f: bool(f.faults & Fault.HEATER_STUCK))
    if seen is None:
        return ""
    frames.link.command("CLEAR")
    return "; the firmware latched heater stuck-on (a warm air bead, heater off), as it should: cleared"


def _carries(duties: dict[str, int]) -> Callable[[Telemetry], bool]:
    """Whether a frame shows these fan duties (percent)."""
    return lambda f: all(abs(f.fan_pct.get(fan, -1.0) - pct) < 0.5 for fan, pct in duties.items())


def fans(frames: Frames, link: RigLink) -> list[Step]:
    """Each fan at 40 % with the others full, then full with the others at 40 %: its speed must rise. One
    that falls is read from another fan's tach (PWM and tach from different fans)."""
    out = []
    keys = [c.key for c in frames.last.channels.of_kind(ChannelKind.FAN_RPM)]
    for i, rpm_key in enumerate(keys):
        speeds = []
        for duty, others in ((40, 100), (100, 40)):
            duties = {f"fan{j}": (duty if j == i else others) for j in range(len(keys))}
            frames.catch_up()
            link.set(**{fan: pct * 10 for fan, pct in duties.items()})
            # From the first frame that carries the new duties: a host that read its frames late (a busy
            # machine, a fast simulation) would otherwise count the old duty's frames as the new one's.
            frames.until(APPLY_WAIT_S, _carries(duties))
            speeds.append(statistics.fmean(f.rpm[rpm_key].value for f in frames.over(FAN_SPIN_S)[-10:]))
        measured = f"fan{i} {speeds[0]:.0f} rpm at 40 %, {speeds[1]:.0f} rpm at 100 % (the other fans the other way)"
        if speeds[1] <= 0:
            step = Step(f"fan{i}", False, measured, f"no tach pulses: check fan{i}'s tach wire and its pull-up")
        elif speeds[0] > speeds[1] * 1.2:
            fix = f"fan{i}'s speed follows another fan: its PWM and tach wires are from different fans"
            step = Step(f"fan{i}", False, measured, fix)
        elif not speeds[1] > speeds[0] * 1.2:
            fix = (
                f"fan{i} does not follow its duty: its PWM reaches no fan or comes at a frequency the fan ignores:"
                f" check fan{i}'s PWM channel and its wire (a 4-wire fan runs full with its PWM input open) and the"
                " PWM's frequency (a 4-wire fan takes 21-28 kHz, PWM_HZ(25000); outside that it runs full)"
            )
            step = Step(f"fan{i}", False, measured, fix)
        else:
            step = Step(f"fan{i}", True, measured)
        out.append(step)
    link.set(fan0=1000, fan1=1000)
    return out


REFUSED_PWM = (
    "the PWM driver refuses an output's duty: check each PWM's channel and frequency in the board's overlay"
    " against its timer (the heater's 1 kHz needs the 32-bit TIM2; the Nucleo's fan timer is 16-bit at 96 MHz:"
    " 1465 Hz at the least; fans take 25 kHz, PWM_HZ(25000))"
)


def stalled_fans(frames: Frames) -> list[Step]:
    """A fan stall latched before the fan steps: the firmware's safe state runs every fan full, and a fan
    that stands still at full duty latches it. The stall stays latched while the fan stands (CLEAR
    latches it again on the next tick), so its cause cannot be narrowed down by trying another duty; the
    other fans are not judged."""
    keys = list(frames.catch_up().rpm)
    stalled = [i for i, key in enumerate(keys) if frames.last.rpm[key].status & ChannelStatus.STALL]
    out = []
    for i in range(len(keys)):
        if i not in stalled:
            out.append(not_run(f"fan{i}", f"{', '.join(f'fan{j}' for j in stalled)} stands still at full duty"))
            continue
        fix = (
            f"fan{i} stands still at full duty: its PWM is inverted (PWM_POLARITY_NORMAL in the board's overlay;"
            " full duty stops an inverted fan, the safe state's too), the fan is seized, or its tach wire or"
            " pull-up is missing"
        )
        out.append(Step(f"fan{i}", False, f"fan{i} 0 rpm at 100 %: FAN_STALL latched", fix))
    return out


def heater_pulse(frames: Frames, link: RigLink, operator: Operator) -> Step:
    if not operator.go_ahead("Heat for up to 40 s (chassis air +5 °C)? The heater must be connected through its fuse."):
        return Step("heater pulse", None, "skipped by the operator")
    names = thermocouples(frames)
    seen = frames.over(2.0)
    base = {n: _mean(seen, n) for n in names}
    if frames.last.faults:
        fix = "clear it (`thermrig rig clear`) once its cause is fixed, then run the bring-up again"
        return Step("heater pulse", False, f"a fault is latched: {flag_names(frames.last.faults)}", fix)
    frames.catch_up()
    link.set(air=round((base[AIR] + 5.0) * 100), hlim=1000, heat=1)
    try:
        first = frames.until(PULSE_MAX_S, lambda f: any(f.named(n).value - base[n] >= PULSE_RISE_C for n in names))
    finally:
        link.set(heat=0)
    if first is None:
        fix = (
            "the heater does not heat: its PWM may reach no heater: check the heater's PWM channel (the timer"
            " output its switch is wired to) and a frequency the switch follows: 1 kHz at most; then its supply,"
            " the thermal fuse and the switch on the heater pin"
        )
        return Step("heater pulse", False, f"nothing rose {PULSE_RISE_C:g} °C in {PULSE_MAX_S:g} s of heat", fix)
    risen = [n for n in names if first.named(n).value - base[n] >= PULSE_RISE_C]
    measured = f"first to rise: {', '.join(risen)} (+{max(first.named(n).value - base[n] for n in risen):.1f} °C)"
    if risen == [AIR]:
        return Step("heater pulse", True, measured)
    fix = (
        f"the heater warms another bead before the chassis air: aim it at the air and keep the {AIR} bead"
        " in the airflow between heater and slot, away from the drive"
    )
    return Step("heater pulse", False, measured, fix)


def bringup(link: RigLink, operator: Operator, report: Callable[[Step], None] | None = None) -> list[Step]:
    """Every phase in order on a rig whose link is open and kept alive; heater off and fans full at the end."""
    frames = Frames(link)
    steps: list[Step] = []

    def add(step: Step) -> None:
        steps.append(step)
        if report is not None:
            report(step)

    names = thermocouples(frames)
    later = ["room temperature", "ambient sensor", *(f"touch {n}" for n in names)]
    later += [f"fan{i}" for i in range(len(frames.last.rpm))] + ["heater pulse"]
    try:
        add(heater_off(frames))
        if steps[-1].passed is False:
            for name in later:
                add(not_run(name, "the heater heats at 0 % (heater off step)"))
            return steps
        step, unreadable = room(frames)
        add(step)
        add(ambient(frames))
        for name in names:
            if name in unreadable:
                key = frames.last.channels.key_of(name)
                add(not_run(f"touch {name}", f"{key} does not read (room temperature step)"))
            else:
                add(touch(frames, operator, name, tuple(unreadable)))
        held = frames.catch_up().faults
        if Fault.HEATER_STUCK in held and AIR not in unreadable:
            # The touch of the air bead warms it with the heater off, which the firmware's stuck-on
            # check reads as a welded heater (the heater off step found none): cleared once more.
            link.command("CLEAR")
            held = frames.over(0.5)[-1].faults
        if Fault.OUTPUT_ERROR in held:
            add(Step("PWM outputs", False, f"{flag_names(held)} latched", REFUSED_PWM))
        if held == Fault.FAN_STALL:
            for step in stalled_fans(frames):
                add(step)
            add(not_run("heater pulse", "a fan stalls at full duty (the fan steps)"))
        elif held:
            why = f"{flag_names(held)} latched (the steps above), which holds the fans at full and the heater off"
            for i in range(len(frames.last.rpm)):
                add(not_run(f"fan{i}", why))
            add(not_run("heater pulse", why))
        else:
            for step in fans(frames, link):
                add(step)
            add(heater_pulse(frames, link, operator))
    finally:
        frames.close()
        with contextlib.suppress(Exception):
            link.set(heat=0, fan0=1000, fan1=1000)
    return steps


def passed(steps: list[Step]) -> bool:
    return all(s.passed is not False for s in steps)
