"""A change of chassis condition driven rather than waited out (`[equilibrium] transition = "driven"`).

The drive follows the chassis air with a lag of minutes; the air itself reaches a new target in a minute
or two. Under the same fans the drive's excess over the air (its own heat over the airflow's conductance)
stays the same, so the level it will settle at is known before it gets there: the previous run's baseline
plus the step in the air around the slot, the slot's share of the step in the air target (its air coupling,
hardware/profiles/slots.toml: 1 at the top slot, where a profile's air_c is defined, 0.27 upright). Going
hotter, the air target is set AIR_OVERSHOOT_C above the new one with the heater's limit full, so the air
leads the drive further; going cooler, both fans run full (the air cools faster, the drive gives its heat to
more air). Either until the drive controller reaches that level, or until it stops approaching it (Push:
an exponential fit of its course under the push, once the chassis air has reached the push's target, says
it will not get there); then the profile is set and
the equilibrium judged as ever, on the profile's own settings. A drive already above that level (a skipped
cool-down) is cooled with the slot fan full under the new air target. The firmware's limits and safety
are untouched: these are ordinary SET values it checks like any other."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from thermrig.campaign.equilibrium import exp_fit
from thermrig.hardware.chassis_profiles import ChassisProfile
from thermrig.hardware.profiles import load_slot

AIR_OVERSHOOT_C = 3.0  # going hotter: the air target this far above the new one while the drive catches up
AIR_TARGET_MAX_C = 65.0  # the firmware's highest accepted air target (RIG_AIR_TARGET_MAX_CC)
MIN_STEP_C = 1.0  # a smaller step in the air target is waited out
FULL = 1000  # a fan's duty, a heater limit: full, in SET's units (0.1 %)
STALL_AFTER_S = 30.0  # a push is judged from this much of its telemetry on (the drive's course, fitted)
STALL_WINDOW_S = 60.0  # over its last this many seconds
CRAWL = 0.05  # a level within this share of the fitted approach's end (e^-3) is not worth the push
AIR_NEAR_C = 0.5  # the chassis air this far from the push's air target, and still approaching it: not judged
AIR_SPAN_S = 5.0  # the air's position: its mean over this long (a thermocouple's steps and noise)


@dataclass(frozen=True)
class Level:
    """Where a run left the chassis and the drive: its set-up, air target, fans and the drive's baseline."""

    physical: tuple[tuple[str, Any], ...]
    air_c: float | None
    fans: tuple[int, int]
    drive_ctrl_c: float
    coupling: float = 1.0  # the slot's share of a step in the air target (slots.toml's air_coupling)


@dataclass(frozen=True)
class Drive:
    """How a transition is driven: the SET values meanwhile, and the drive controller level to stop at."""

    push: dict[str, int]
    until_c: float
    warms: bool  # the push warms the drive (else it cools it)

    def done(self, drive_ctrl_c: float) -> bool:
        return drive_ctrl_c >= self.until_c if self.warms else drive_ctrl_c <= self.until_c

    @property
    def air_c(self) -> float | None:
        """The push's chassis-air target, °C (None: a profile without one)."""
        return None if "air" not in self.push else self.push["air"] / 100

    def describe(self) -> str:
        if self.warms:
            how = f"air target +{AIR_OVERSHOOT_C:g} °C, heater limit full"
        else:
            how = "both fans full" if self.push.get("fan0") == FULL else "the slot fan full"
        return f"{how} until drive_ctrl {'>=' if self.warms else '<='} {self.until_c:.2f} °C"


def level_of(physical: dict[str, Any], profile: ChassisProfile, args: dict[str, int], drive_ctrl_c: float) -> Level:
    air = None if profile.trace is not None else profile.air_c
    slot = physical.get("slot")
    coupling = 1.0 if slot is None else load_slot(str(slot)).air_coupling  # no slot factor: the top's, 1
    return Level(tuple(sorted(physical.items())), air, (args["fan0"], args["fan1"]), drive_ctrl_c, coupling)


def drive_for(previous: Level | None, now: Level, args: dict[str, int]) -> Drive | None:
    """How to drive from the previous run's level to this profile's, now.drive_ctrl_c being the drive
    controller's temperature now; None when it is waited out: no previous run, another set-up, a profile
    without a fixed air target (heater off or a trace), other fans (the drive's excess over the air
    changes), a step under MIN_STEP_C, or a cooler profile with the drive already at or below its level.
    The level: the previous baseline plus the slot's share of the step in the air target. A drive above its
    new level (going cooler, or hotter after a skipped cool-down left it hot) is cooled: both fans full
    going cooler (the heater idles), going hotter only the slot fan, the heater and the chassis fan holding
    the new air target as the active cool-down does."""
    if previous is None or previous.physical != now.physical or previous.fans != now.fans:
        return None
    if previous.air_c is None or now.air_c is None or abs(now.air_c - previous.air_c) < MIN_STEP_C:
        return None
    step = now.air_c - previous.air_c
    level = previous.drive_ctrl_c + now.coupling * step
    if now.drive_ctrl_c > level:
        push = {**args, "fan1": FULL} if step > 0 else {**args, "fan0": FULL, "fan1": FULL}
        return Drive(push, level, warms=False)
    if step < 0:
        return None
    air = min(now.air_c + AIR_OVERSHOOT_C, AIR_TARGET_MAX_C)
    return Drive({**args, "air": round(air * 100), "hlim": FULL}, level, warms=True)


@dataclass
class Push:
    """Whether a push still brings the drive to a level: once it has STALL_AFTER_S of telemetry, an
    exponential fit of the drive controller over the last STALL_WINDOW_S (its course under the push) whose
    final value falls short of the level says it will not get there, and the push is given up (the profile
    set), so it never holds the drive away from where the profile takes it once it no longer helps. Not
    while the chassis air is still on its way to the push's air target (air_c: more than AIR_NEAR_C from it
    and nearer than STALL_AFTER_S before): the drive's course then answers to air still rising or falling
    under it, and a fit of it says where the drive would go in the air of now, not in the push's (the Puget
    sample's push going hotter from above was given up after 30 s, the air still rising under it)."""

    until_c: float
    warms: bool
    air_c: float | None = None
    started_s: float | None = None
    samples: deque[tuple[float, float]] = field(default_factory=deque)
    air: deque[tuple[float, float]] = field(default_factory=deque)
    fitted_s: float = float("-inf")

    def stalled(self, t_s: float, drive_ctrl_c: float, air_c: float | None = None) -> bool:
        self.started_s = t_s if self.started_s is None else self.started_s
        self.samples.append((t_s, drive_ctrl_c))
        while t_s - self.samples[0][0] > STALL_WINDOW_S:
            self.samples.popleft()
        if air_c is not None:
            self.air.append((t_s, air_c))
            while t_s - self.air[0][0] > STALL_AFTER_S + AIR_SPAN_S:
                self.air.popleft()
        if self.air_moving(t_s):  # judged from STALL_AFTER_S after the air arrived, on its course since
            self.started_s = t_s
            self.samples = deque([(t_s, drive_ctrl_c)])
            return False
        if t_s - self.started_s < STALL_AFTER_S or t_s - self.fitted_s < 1.0:
            return False
        self.fitted_s = t_s
        fit = exp_fit(np.array([t for t, _ in self.samples]), np.array([v for _, v in self.samples]))
        short = fit.final < self.until_c if self.warms else fit.final > self.until_c
        # or the level in the last CRAWL of the approach: more than three time constants away
        return short or abs(self.until_c - fit.final) < CRAWL * abs(fit.excess)

    def air_moving(self, t_s: float) -> bool:
        """The chassis air more than AIR_NEAR_C from the push's target, and more than that nearer to it than
        STALL_AFTER_S before (each its mean over AIR_SPAN_S)."""
        if self.air_c is None or not self.air or t_s - self.air[0][0] < STALL_AFTER_S:
            return False
        now = [a for t, a in self.air if t > t_s - AIR_SPAN_S]
        then = [a for t, a in self.air if t <= self.air[0][0] + AIR_SPAN_S]
        away_now, away_then = abs(self.air_c - float(np.mean(now))), abs(self.air_c - float(np.mean(then)))
        return away_now > AIR_NEAR_C and away_then - away_now > AIR_NEAR_C
