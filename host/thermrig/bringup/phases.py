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
from collections.abc import Callable
from dataclasses import dataclass

from thermrig import wiring
from thermrig.bringup.operator import Operator
from thermrig.link.frames import newest
from thermrig.link.rig_link import RigLink
from thermrig.protocol.channels import ChannelKind
from thermrig.protocol.messages import Fault, Telemetry, flag_names
from thermrig.wiring import AIR, Finding

APPLY_WAIT_S = 5.0  # a duty the rig was sent shows in its telemetry within this (then measured anyway)


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


def as_step(name: str, finding: Finding) -> Step:
    """A rule's finding as a step: FAIL with its fix when it found a fault, else PASS."""
    return Step(name, not finding.fault, finding.measured, finding.fix)


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


def thermocouples(frames: Frames) -> list[str]:
    return wiring.thermocouples(frames.last)


def heater_off(frames: Frames) -> Step:
    """With the heater at 0 % the chassis air must not warm (wiring.heater_off). Found before anything heats."""
    finding = wiring.heater_off(frames.over(wiring.HEATER_OFF_WATCH_S))
    if finding is None:
        key = frames.last.channels.key_of(AIR)
        return not_run("heater off", f"{AIR} ({key}) does not read steadily (the room temperature step says why)")
    return as_step("heater off", finding)


def room(frames: Frames) -> tuple[Step, list[str]]:
    """The room step, and the thermocouples it found unreadable (open, shorted or unstable): touching
    those tells nothing."""
    found = wiring.room(frames.over(wiring.ROOM_WATCH_S))
    if found.findings:
        fix = "; ".join(str(f) for f in found.findings)
        return Step("room temperature", False, found.measured, fix), found.unreadable
    return Step("room temperature", True, found.measured), found.unreadable


def ambient(frames: Frames) -> Step:
    return as_step("ambient sensor", wiring.ambient(frames.last))


def touch(frames: Frames, operator: Operator, name: str, unreadable: tuple[str, ...] = ()) -> Step:
    """The operator holds one bead: its own channel must rise, no other (of those that read at all)."""
    channels = frames.last.channels
    names = [n for n in thermocouples(frames) if n not in unreadable]
    base = wiring.baseline(frames.over(wiring.BASELINE_S), names)
    frames.catch_up()
    operator.touch(name, channels.key_of(name))
    try:
        rose = frames.until(wiring.TOUCH_WAIT_S, lambda f: bool(wiring.risen(f, base, wiring.TOUCH_RISE_C)))
    finally:
        operator.let_go(name)
    frames.until(wiring.SETTLE_WAIT_S, lambda f: wiring.settled(f, base))
    cleared = (
        _stuck_on_cleared(frames) if rose is not None and AIR in wiring.risen(rose, base, wiring.TOUCH_RISE_C) else ""
    )
    finding = wiring.touch(channels, name, base, rose)
    return as_step(f"touch {name}", finding if finding.fault else Finding(finding.measured + cleared))


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
    """Each fan at the low duty with the others full, then full with the others low (wiring.fan)."""
    out = []
    keys = [c.key for c in frames.last.channels.of_kind(ChannelKind.FAN_RPM)]
    for i, rpm_key in enumerate(keys):
        speeds = []
        for duty, others in ((wiring.FAN_LOW_PCT, wiring.FAN_HIGH_PCT), (wiring.FAN_HIGH_PCT, wiring.FAN_LOW_PCT)):
            duties = {f"fan{j}": (duty if j == i else others) for j in range(len(keys))}
            frames.catch_up()
            link.set(**{fan: pct * 10 for fan, pct in duties.items()})
            # From the first frame that carries the new duties: a host that read its frames late (a busy
            # machine, a fast simulation) would otherwise count the old duty's frames as the new one's.
            frames.until(APPLY_WAIT_S, _carries(duties))
            speeds.append(wiring.fan_speed(frames.over(wiring.FAN_SPIN_S), rpm_key))
        out.append(as_step(f"fan{i}", wiring.fan(i, *speeds)))
    link.set(fan0=1000, fan1=1000)
    return out


def stalled_fans(frames: Frames) -> list[Step]:
    """A fan stall latched before the fan steps (wiring.stalled_fans): the other fans are not judged."""
    stalled = wiring.stalled_fans(frames.catch_up())
    why = f"{', '.join(f'fan{j}' for j in stalled)} stands still at full duty"
    return [
        as_step(f"fan{i}", stalled[i]) if i in stalled else not_run(f"fan{i}", why) for i in range(len(frames.last.rpm))
    ]


def heater_pulse(frames: Frames, link: RigLink, operator: Operator) -> Step:
    if not operator.go_ahead("Heat for up to 40 s (chassis air +5 °C)? The heater must be connected through its fuse."):
        return Step("heater pulse", None, "skipped by the operator")
    base = wiring.baseline(frames.over(wiring.BASELINE_S), thermocouples(frames))
    if (latched := wiring.latched_fault(frames.last)) is not None:
        return as_step("heater pulse", latched)
    frames.catch_up()
    link.set(air=round((base[AIR] + wiring.PULSE_TARGET_C) * 100), hlim=1000, heat=1)
    try:
        first = frames.until(wiring.PULSE_MAX_S, lambda f: bool(wiring.risen(f, base, wiring.PULSE_RISE_C)))
    finally:
        link.set(heat=0)
    return as_step("heater pulse", wiring.heater_pulse(base, first))


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
        if (refused := wiring.refused_pwm(frames.last)) is not None:
            add(as_step("PWM outputs", refused))
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
