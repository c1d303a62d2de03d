"""The plan's estimates as `thermrig plan`, `thermrig run` and `lab plan` give them: the rig's recorded
runs where they hold one like a run, else the calibrated rig model walked through the plan
(campaign.model_estimate on testbed.simulated_rig_model), kept under the history folder by the campaign's
content, else fixed guesses; and a line saying which."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from thermrig.campaign.history import History, RunRecord
from thermrig.campaign.model_estimate import MODEL_SOURCE, Progressed, model_history
from thermrig.campaign.plan import COOLDOWN_GUESS_S, EQUILIBRIUM_GUESS_S, GUESS, HISTORY, MODEL, Plan
from thermrig.errors import ThermrigError

CACHE = ".model-estimates"  # under the history folder: the model's walk per campaign file's content


def needs_model(plan: Plan) -> bool:
    """Some run's equilibrium or cool-down has no recorded run like it."""
    return any(GUESS in (e.equilibrium_from, e.cooldown_from) for e in map(plan.phases, plan.runs))


def cache_file(plan: Plan, folder: Path) -> Path:
    """By the campaign's content (its rules, factors and workloads; not the order: the planner reads the
    walk by transition, so another drawn order of the same campaign is estimated from it too)."""
    text = repr(dataclasses.replace(plan.campaign, seed=None))
    return folder / CACHE / f"{plan.campaign.name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"


def cached_model(plan: Plan, folder: Path) -> History | None:
    """The rig model's walk a `thermrig plan` of the same campaign left under folder, if any."""
    try:
        records = json.loads(cache_file(plan, folder).read_text())
        return History(plan.campaign.rig_name, tuple(RunRecord(**r) for r in records), MODEL_SOURCE)
    except (OSError, ValueError, TypeError):
        return None


def _keep(plan: Plan, folder: Path, model: History) -> None:
    path = cache_file(plan, folder)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([dataclasses.asdict(r) for r in model.runs], indent=1))
    except OSError:  # a read-only history folder: the estimate holds, only not kept
        pass


def with_model(
    plan: Plan,
    folder: Path | None = None,
    run_model: bool = True,
    progressed: Progressed | None = None,
    failed: Callable[[str], None] | None = None,
) -> Plan:
    """The plan with the rig model's walk through it where history leaves runs unknown: the walk a plan
    of the same campaign cached under folder, else (run_model) walked now, progressed told the runs
    walked, and cached there. A model that cannot walk the plan leaves the fixed guesses; failed is told
    why."""
    if not plan.runs or not needs_model(plan):
        return plan
    if folder is not None and (cached := cached_model(plan, folder)) is not None:
        return plan.with_model(cached)
    if not run_model:
        return plan
    from thermrig.testbed.simulated_rig_model import rig_model, stepped_rig_model  # the simulator: only when needed

    traced = any(p.trace is not None for p in plan.campaign.profiles.values())
    try:  # a played trace's thread needs frames of its own: the stepped simulated rig (testbed.simulated_rig_model)
        model = model_history(plan, stepped_rig_model if traced else rig_model, progressed)
    except (ThermrigError, OSError) as exc:  # the estimate falls back to the guesses, and says why
        if failed is not None:
            failed(str(exc))
        return plan
    if folder is not None:
        _keep(plan, folder, model)
    return plan.with_model(model)


def sources(plan: Plan) -> str:
    """Which runs' equilibrium and cool-down came from where, in one clause."""
    phases = [plan.phases(r) for r in plan.runs]
    eq = Counter(e.equilibrium_from for e in phases)
    cd = Counter(e.cooldown_from for e in phases)
    n = len(phases)
    names = {
        HISTORY: f"recorded runs of rig {plan.campaign.rig_name}"
        + (f" ({len(plan.history.runs)} under {plan.history.source})" if plan.history and plan.history.runs else ""),
        MODEL: "the calibrated rig model run through this plan",
        GUESS: f"fixed guesses ({EQUILIBRIUM_GUESS_S:g} s equilibrium, {COOLDOWN_GUESS_S:g} s cool-down)",
    }
    parts = []
    for source in (HISTORY, MODEL, GUESS):
        if eq[source] or cd[source]:
            parts.append(f"{names[source]}: equilibrium of {eq[source]}/{n} runs, cool-down of {cd[source]}/{n}")
    return "estimates from " + "; ".join(parts)
