"""Bounded fit of the documented parameters to the seeds, on the replay (thermrig.sim.plant_replay).

950 Pro against the Puget tables (seed 001): one parameter set for the drive, one per slot, one per
chassis profile (its chassis-air target), never per table cell; which of them are free and what the
others are set from: thermrig.calibration.parameters. SM951 against seed 002: its throttle threshold,
heavy-throttle power and idle power. The 950 Pro objective is the acceptance test of `make calibrate`:
per cell, (onset error / onset tolerance)^2 + (depth error / 8 pp)^2. Powell's method: derivative-free,
as the throttle makes the objective piecewise constant in places; the best point any start reached is
the result, so a fit never returns worse than where it began. `make fit` (thermrig calibrate fit --write)
writes the result into hardware/profiles in place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from thermrig.analysis.published import (
    DEPTH_PP,
    PUGET,
    PUGET_RUNTIME_S,
    SM951_CONDITION,
    SM951_IOPS_BARE,
    SM951_PEAK_S,
    SM951_RANDOM_RUNTIME_S,
    SM951_RANDOM_WINDOW_S,
    SM951_SEQ_RUNTIME_S,
    PugetCell,
)
from thermrig.analysis.throttle import throttle_of
from thermrig.calibration.parameters import FIT_MODEL, Bound, Fitted, Model, current
from thermrig.dut.replay import ModelReplay, Pattern, Workload, condition
from thermrig.hardware.drive_profiles import DriveProfile, load_drive_profile
from thermrig.hardware.profiles import (
    ChassisParams,
    load_chassis,
    load_drive_thermal,
    load_slot,
)

SEQ_WRITE = Pattern(write=True, random=False, bs=128 * 1024)
RAND_WRITE = Pattern(write=True, random=True, bs=4096)

# Extra starts of the 950 Pro fit: the objective has a narrow minimum in the throttle gain near 0.035
# (the allowance still settling when depth is read) and a plateau from about 0.08 to 0.3.
GAIN_STARTS = (0.035, 0.1)


@dataclass(frozen=True)
class CellResult:
    onset_s: float | None
    depth_pct: float


def evaluate(
    replayer: ModelReplay, chassis: ChassisParams, fitted: Fitted, cells: Sequence[PugetCell] = PUGET
) -> list[CellResult]:
    cooling = load_drive_thermal("none")
    out = []
    for cell in cells:
        cond = replace(condition(fitted.slots[cell.slot], cooling, cell.profile), air_c=fitted.air_c[cell.profile])
        th = throttle_of(replayer.replay(chassis, fitted.drive, cond, Workload(SEQ_WRITE, PUGET_RUNTIME_S)))
        out.append(CellResult(th.onset_s, th.depth_pct))
    return out


def cell_cost(cell: PugetCell, r: CellResult) -> float:
    onset = r.onset_s if r.onset_s is not None else float(PUGET_RUNTIME_S)
    return ((onset - cell.onset_s) / cell.onset_tolerance_s()) ** 2 + ((r.depth_pct - cell.depth_pct) / DEPTH_PP) ** 2


def cost(results: list[CellResult], cells: Sequence[PugetCell] = PUGET) -> float:
    return sum(cell_cost(c, r) for c, r in zip(cells, results, strict=True))


@dataclass(frozen=True)
class FitResult:
    fitted: Fitted
    cost: float
    start_cost: float
    evaluations: int
    converged: bool  # every Powell start ran to its tolerances (xtol, ftol), none stopped by the budget


def fit(
    replayer: ModelReplay,
    model: Model = FIT_MODEL,
    base: Fitted | None = None,
    cells: Sequence[PugetCell] = PUGET,
    maxfev: int = 1500,
    gain_starts: Sequence[float] = GAIN_STARTS,
    report: Callable[[int, float], None] | None = None,
) -> FitResult:
    """Powell within the bounds from base's values (the profiles' by default), then from the best point
    so far with the throttle gain at each of gain_starts (when the model frees it), maxfev evaluations
    shared among the starts; the result is the best point seen, the start included. converged: each start
    that ran ended on Powell's tolerances rather than on the budget (a start the budget left no room for
    counts as not converged)."""
    from scipy.optimize import minimize  # here, not at the top: every CLI command imports this module

    chassis = load_chassis()
    base = current() if base is None else base
    free = model.free
    calls = [0]
    best: list[tuple[float, list[float]]] = []

    def objective(x: np.ndarray) -> float:
        xs = [float(a) for a in x]
        c = cost(evaluate(replayer, chassis, model.apply(xs, base), cells), cells)
        calls[0] += 1
        if not best or c < best[0][0]:
            best[:] = [(c, xs)]
        if report is not None:
            report(calls[0], c)
        return c

    x0 = model.start(base)
    start_cost = objective(np.array(x0))
    names = [b.name for b in free]
    gains: list[float | None] = [None]
    if "throttle_gain_w_per_k_s" in names:
        gains += list(gain_starts)
    converged = True
    for k, gain in enumerate(gains):
        budget = (maxfev - calls[0]) // (len(gains) - k)
        x = list(x0) if gain is None else list(best[0][1])  # a later start: the best point, the gain moved
        if gain is not None:
            i = names.index("throttle_gain_w_per_k_s")
            if abs(x[i] - gain) < 1e-9:
                continue
            if budget < 2 * len(free):
                converged = False
                continue
            x[i] = gain
        res = minimize(
            objective,
            np.array(x),
            method="Powell",
            bounds=[(b.lo, b.hi) for b in free],
            options={"maxfev": budget, "xtol": 1e-3, "ftol": 1e-4},
        )
        converged = converged and bool(res.success)
    c, x = best[0]
    return FitResult(model.apply(x, base), c, start_cost, calls[0], converged)


SM951_BOUNDS = (
    Bound("tmt1_c", 65, 85, "no published threshold; 'start near 70-80 C on the controller'"),
    Bound("tmt2_w", 1.3, 3.0, "below PS2's 3.0 W"),
    Bound("idle_power_w", 0.5, 2.0, "awake idle"),
)


def sm951_replay(
    replayer: ModelReplay, chassis: ChassisParams, drive: DriveProfile
) -> tuple[float | None, dict[str, float]]:
    """Seed 002 on the replay: seconds at peak sequential write (bare), sustained 4 KB random-write IOPS
    on a full drive, bare and with the passive heatsink."""
    slot_name, profile = SM951_CONDITION
    slot = load_slot(slot_name)
    bare = condition(slot, load_drive_thermal("none"), profile)
    peak = throttle_of(replayer.replay(chassis, drive, bare, Workload(SEQ_WRITE, SM951_SEQ_RUNTIME_S))).onset_s
    iops = {}
    for heatsink in ("none", "passive"):
        cond = condition(slot, load_drive_thermal(heatsink), profile)
        series = replayer.replay(
            chassis, drive, cond, Workload(RAND_WRITE, SM951_RANDOM_RUNTIME_S, preconditioned=True)
        )
        tail = series[-SM951_RANDOM_WINDOW_S:]
        iops[heatsink] = sum(tail) / len(tail) / RAND_WRITE.bs
    return peak, iops


def fit_sm951(replayer: ModelReplay, maxfev: int = 300) -> tuple[DriveProfile, float]:
    from scipy.optimize import minimize  # here, not at the top: every CLI command imports this module

    chassis = load_chassis()
    drive = load_drive_profile("sm951_512")

    def build(x: np.ndarray) -> DriveProfile:
        states = (*drive.states[:-1], replace(drive.states[-1], max_w=float(x[1])))
        return replace(drive, tmt1_c=float(x[0]), idle_power_w=float(x[2]), states=states)

    def objective(x: np.ndarray) -> float:
        peak, iops = sm951_replay(replayer, chassis, build(x))
        p = peak if peak is not None else float(SM951_SEQ_RUNTIME_S)
        return ((p - SM951_PEAK_S) / 15.0) ** 2 + ((iops["none"] - SM951_IOPS_BARE) / (0.05 * SM951_IOPS_BARE)) ** 2

    best: list[tuple[float, np.ndarray]] = []

    def tracked(x: np.ndarray) -> float:
        c = objective(x)
        if not best or c < best[0][0]:
            best[:] = [(c, np.array(x))]
        return c

    x0 = np.array([drive.tmt1_c, drive.states[-1].max_w, drive.idle_power_w])
    tracked(x0)
    minimize(tracked, x0, method="Powell", bounds=[(b.lo, b.hi) for b in SM951_BOUNDS], options={"maxfev": maxfev})
    c, x = best[0]
    return build(x), c
