"""Fit the plant's chassis parameters to a rig's recorded step sequence (`thermrig rig identify`): the
chassis air's heat capacity and its conductances to the room with the fans still and at full chassis-fan
airflow, found by bounded least squares on the air temperature, the plant (thermrig.sim.plant) driven
by the heater and fan duties the rig recorded. The heater's power is the user's (its nameplate): with
temperatures alone, power, capacity and conductances scale together, so one of them must be known. The
heater element's own capacity and coupling set a lag of seconds that 1 s data cannot separate from the
thermocouple's, and stay the base chassis's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from thermrig.errors import ThermrigError
from thermrig.hardware.profiles import ChassisParams, load_drive_thermal, load_slot
from thermrig.sim.plant import Plant

# (ChassisParams field, lower bound, upper bound): the bounds the chassis file's reader enforces
FITTED = (("air_capacity", 50.0, 50_000.0), ("g_still", 0.1, 100.0), ("g_fan", 0.01, 200.0))
STEP_S = 1.0  # the fit compares 1 s means


class IdentifyError(ThermrigError, ValueError):
    pass


class Sample(Protocol):
    """What the rig measured, as the fit needs it (thermrig.calibration.chassis_steps.StepSample)."""

    @property
    def t_s(self) -> float: ...
    @property
    def heater_pct(self) -> float: ...
    @property
    def fan_pct(self) -> tuple[float, float]: ...
    @property
    def air_c(self) -> float: ...
    @property
    def room_c(self) -> float: ...


@dataclass(frozen=True)
class Second:
    """One second of the recording: mean heater duty, air and room; the fans' duty at its end."""

    t_s: float
    heater_pct: float
    fan_pct: tuple[float, float]
    air_c: float
    room_c: float


@dataclass(frozen=True)
class ChassisFit:
    chassis: ChassisParams
    rms_c: float  # residual: measured against modelled chassis air, over every second
    max_c: float
    seconds: int
    start: ChassisParams


def per_second(samples: Sequence[Sample]) -> list[Second]:
    """1 s means (the fans' last duty in each second: a step lands on its second)."""
    out: list[Second] = []
    t = np.array([s.t_s for s in samples])
    for k in range(int(t[-1] // STEP_S) + 1):
        idx = np.nonzero((t >= k * STEP_S) & (t < (k + 1) * STEP_S))[0]
        if len(idx) == 0:
            continue
        chunk = [samples[i] for i in idx]
        out.append(
            Second(
                t_s=k * STEP_S,
                heater_pct=float(np.mean([s.heater_pct for s in chunk])),
                fan_pct=chunk[-1].fan_pct,
                air_c=float(np.mean([s.air_c for s in chunk])),
                room_c=float(np.mean([s.room_c for s in chunk])),
            )
        )
    return out


def simulate(chassis: ChassisParams, seconds: Sequence[Second]) -> np.ndarray:
    """The chassis air the plant gives for the recorded duties, second by second, from the first
    measured air temperature."""
    plant = Plant(chassis, load_slot("top"), load_drive_thermal("none"), room_c=seconds[0].room_c)
    plant.state.air = plant.state.heater = seconds[0].air_c
    out = np.empty(len(seconds))
    for i, s in enumerate(seconds):
        out[i] = plant.state.air
        plant.room_c = s.room_c
        plant.heater_duty = s.heater_pct / 100.0
        plant.fan_duty = [s.fan_pct[0] / 100.0, s.fan_pct[1] / 100.0]
        plant.step(STEP_S)
    return out


def fit_chassis(samples: Sequence[Sample], base: ChassisParams, heater_w: float) -> ChassisFit:
    """The base chassis with its air capacity and conductances fitted to the samples; heater_w: the
    heater's full power (W)."""
    from scipy.optimize import least_squares  # here, not at the top: every CLI command imports this module

    seconds = per_second(samples)
    if len(seconds) < 120:
        raise IdentifyError(f"{len(seconds)} s of data: identification needs at least 120 s of steps")
    if max(s.heater_pct for s in seconds) < 5:
        raise IdentifyError("the heater never ran during the recording: nothing to identify")
    start = replace(base, heater_max_w=heater_w)
    measured = np.array([s.air_c for s in seconds])

    def chassis_at(x: np.ndarray) -> ChassisParams:
        return replace(start, **{name: float(np.exp(v)) for (name, _, _), v in zip(FITTED, x, strict=True)})

    def residual(x: np.ndarray) -> np.ndarray:
        return simulate(chassis_at(x), seconds) - measured

    x0 = np.log([min(max(getattr(start, n), lo), hi) for n, lo, hi in FITTED])
    lo, hi = np.log([b[1] for b in FITTED]), np.log([b[2] for b in FITTED])
    result = least_squares(residual, x0, bounds=(lo, hi), x_scale=1.0, diff_step=1e-3)
    r = residual(result.x)
    return ChassisFit(
        chassis_at(result.x), float(np.sqrt(np.mean(r**2))), float(np.max(np.abs(r))), len(seconds), start
    )


HELD_OUT_MIN_S = 60  # the shortest held-out step worth judging on


@dataclass(frozen=True)
class HeldOutStep:
    """The recording's last step (the heater off at the last fan level), held out: the chassis fitted on
    the seconds before it, then run over the whole recording; its error over the held-out seconds says
    how well the fitted simulator predicts air it was not fitted on."""

    fit: ChassisFit  # on the seconds before the step only
    start_s: float  # where the step starts, s into the recording
    seconds: int
    fan_pct: tuple[float, float]
    rms_c: float  # measured against modelled chassis air over the step
    max_c: float


def last_step(seconds: Sequence[Second]) -> int:
    """Index of the first second after the heater last ran: the final cool-down."""
    on = [i for i, s in enumerate(seconds) if s.heater_pct >= 0.5]
    return on[-1] + 1 if on else len(seconds)


def fit_held_out(samples: Sequence[Sample], base: ChassisParams, heater_w: float) -> HeldOutStep:
    """Fit without the recording's last step (fit_chassis on what comes before it), then predict it: the
    plant with that fit runs over the whole recording from its first second, as the fit's own residual does,
    and is judged on the step's seconds alone."""
    seconds = per_second(samples)
    k = last_step(seconds)
    held = seconds[k:]
    if len(held) < HELD_OUT_MIN_S:
        raise IdentifyError(
            f"the recording ends {len(held)} s after the heater last ran: a held-out step needs {HELD_OUT_MIN_S} s"
        )
    fit = fit_chassis(seconds[:k], base, heater_w)
    r = simulate(fit.chassis, seconds)[k:] - np.array([s.air_c for s in held])
    return HeldOutStep(
        fit, held[0].t_s, len(held), held[0].fan_pct, float(np.sqrt(np.mean(r**2))), float(np.max(np.abs(r)))
    )


@dataclass(frozen=True)
class Identified:
    """A recording's chassis fit and its held-out step (None where the recording's last cool-down is too
    short to judge on: why says so; the fit still holds)."""

    fit: ChassisFit
    held: HeldOutStep | None
    why: str = ""


def identify_chassis(samples: Sequence[Sample], base: ChassisParams, heater_w: float) -> Identified:
    """fit_chassis on the whole recording, and fit_held_out where the recording allows one."""
    fit = fit_chassis(samples, base, heater_w)
    try:
        return Identified(fit, fit_held_out(samples, base, heater_w))
    except IdentifyError as exc:
        return Identified(fit, None, str(exc))
