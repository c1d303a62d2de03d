"""A campaign's replicates and factor effects (docs/analysis.md): per cell (the same level of every
factor) the mean and spread of a metric over its repeats; per factor and level, the difference of its
mean from the reference level's, with a Welch 95 % confidence interval. The campaign randomised its run
order (recorded seed), so a slow drift of the room spreads over the levels instead of biasing one;
each effect also reports the correlation of the metric with the run order, to show such a drift.

An interval needs replicates: at least two runs of every cell (the same level of every factor) on both
sides. Without them the spread of a level mixes the other factors' effects with the noise, and the
interval says nothing: the effect then carries no interval and a note that replicates are needed."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from thermrig.analysis.run_analysis import RunSummary
from thermrig.analysis.run_data import FACTORS

CONFIDENCE = 0.95
NEEDS_REPLICATES = "no interval: fewer than two runs of a cell; repeat the runs (campaign repeats >= 2)"


@dataclass(frozen=True)
class Cell:
    levels: dict[str, str]  # factor -> level
    metric: str
    n: int
    mean: float
    sd: float | None  # None for a single run


@dataclass(frozen=True)
class Effect:
    factor: str
    level: str
    reference: str
    metric: str
    n: int
    n_reference: int
    difference: float  # mean(level) - mean(reference)
    ci_low: float | None  # None without replicates (fewer than two runs of a cell, either side)
    ci_high: float | None
    order_r: float | None  # correlation of the metric with the run order (None: too few runs)
    note: str = ""  # why there is no interval


METRICS: dict[str, Callable[[RunSummary], float | None]] = {
    "onset_s": lambda s: s.throttle.onset_s,
    "depth_pct": lambda s: s.throttle.depth_pct,
    "plateau_bps": lambda s: s.throttle.plateau_bps,
}


def _values(runs: list[RunSummary], metric: str) -> list[tuple[RunSummary, float]]:
    get = METRICS[metric]
    return [(s, v) for s in runs if (v := get(s)) is not None and math.isfinite(v)]


def cells(runs: list[RunSummary]) -> list[Cell]:
    out = []
    for metric in METRICS:
        groups: dict[tuple[tuple[str, str], ...], list[float]] = {}
        for s, v in _values(runs, metric):
            groups.setdefault(tuple(sorted(_factors(s).items())), []).append(v)
        for levels, vs in sorted(groups.items()):
            sd = float(np.std(vs, ddof=1)) if len(vs) > 1 else None
            out.append(Cell(dict(levels), metric, len(vs), float(np.mean(vs)), sd))
    return out


def _factors(s: RunSummary) -> dict[str, str]:
    return {k: s.tags[k] for k in FACTORS if s.tags.get(k)}


def replicated(values: list[tuple[RunSummary, float]]) -> bool:
    """Every cell among these runs has at least two runs."""
    counts = Counter(tuple(sorted(_factors(s).items())) for s, _ in values)
    return bool(counts) and min(counts.values()) >= 2


def welch_ci(a: list[float], b: list[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """CI of mean(a) - mean(b), Welch-Satterthwaite degrees of freedom."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se = math.sqrt(va + vb)
    diff = float(np.mean(a) - np.mean(b))
    if se == 0:
        return diff, diff
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    from scipy import stats  # here: the CLI imports this module for every command, scipy.stats takes a second

    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    return diff - half, diff + half


def effects(runs: list[RunSummary], order: dict[str, int]) -> list[Effect]:
    """order: run -> its place in the campaign's run order (1 = first run)."""
    out = []
    for metric in METRICS:
        values = _values(runs, metric)
        for factor in FACTORS:
            levels: dict[str, list[tuple[RunSummary, float]]] = {}
            for s, v in values:
                if s.tags.get(factor):
                    levels.setdefault(s.tags[factor], []).append((s, v))
            if len(levels) < 2:
                continue
            reference = sorted(levels)[0]
            ref = [v for _, v in levels[reference]]
            for level in sorted(levels)[1:]:
                vs = [v for _, v in levels[level]]
                ok = replicated(levels[level]) and replicated(levels[reference])
                ci = welch_ci(vs, ref) if ok else None
                out.append(
                    Effect(
                        factor,
                        level,
                        reference,
                        metric,
                        len(vs),
                        len(ref),
                        float(np.mean(vs) - np.mean(ref)),
                        None if ci is None else ci[0],
                        None if ci is None else ci[1],
                        _order_r(values, order),
                        "" if ci is not None else NEEDS_REPLICATES,
                    )
                )
    return out


def _order_r(values: list[tuple[RunSummary, float]], order: dict[str, int]) -> float | None:
    pairs = [(order[s.run], v) for s, v in values if s.run in order]
    if len(pairs) < 3 or len({p for p, _ in pairs}) < 2 or len({v for _, v in pairs}) < 2:
        return None
    return float(np.corrcoef([p for p, _ in pairs], [v for _, v in pairs])[0, 1])
