"""The run plan: every combination of factor levels and workloads, repeated, in an order that is random
within each physical configuration (so the operator changes hardware as rarely as possible) and
reproducible from the recorded seed. With `order = "blocks"` the runs of one chassis condition (profile
and fan level) follow each other within a configuration, the blocks in random order and the runs in
each block too: the chassis changes as rarely as the hardware does. With `order = "least-change"` the
blocks go from the coolest condition to the hottest in one configuration and back in the next (the first
configuration's way drawn from the seed), so each change of condition is the smallest step left and a
change of hardware keeps the chassis condition; the configurations and the runs in each block are still
in random order.

The estimate of each run's phases comes from the rig's recorded runs when the planner is given them
(campaign.history: equilibrium by chassis transition, cool-down by profile and workload); where they
hold nothing like the run, from the calibrated rig model's walk through the plan (campaign.model_estimate,
read the same way); else from fixed guesses."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace
from typing import Any

from thermrig.campaign.history import START, History, workload_key
from thermrig.campaign.spec import PHYSICAL, Campaign
from thermrig.campaign.transition import MIN_STEP_C
from thermrig.drive.thermal_config import HctmLevel
from thermrig.fio.workloads import ResolvedWorkload
from thermrig.hardware.chassis_profiles import ChassisProfile
from thermrig.hardware.profiles import SLOTS

EQUILIBRIUM_GUESS_S = 300.0  # for the estimate only, without history: the real wait is measured
COOLDOWN_GUESS_S = 300.0
CONDITION = ("profile", "fan1_pct")  # what order = "blocks" keeps together: the chassis condition
BLOCKED = ("blocks", "least-change")  # the orders that keep a chassis condition's runs together


@dataclass(frozen=True)
class RunSpec:
    index: int
    run_id: str
    physical: dict[str, Any]  # slot, heatsink, airflow: what the operator sets up
    profile: str
    fan1_pct: float | None
    workload: ResolvedWorkload
    repeat: int
    hctm: HctmLevel | None = None  # the hctm factor's level; None: the campaign leaves HCTM alone

    def tags(self) -> dict[str, str]:
        out = {k: str(v) for k, v in self.physical.items()}
        out.update(profile=self.profile, workload=self.workload.name)
        if self.hctm is not None:
            out["hctm"] = self.hctm.tag
        return out


HISTORY, MODEL, GUESS = "history", "model", "guess"  # where an estimate came from


@dataclass(frozen=True)
class PhaseEstimate:
    """One run's phases as the planner expects them, and where its equilibrium and cool-down came from
    (HISTORY, MODEL or GUESS; the baseline follows the equilibrium's)."""

    equilibrium_s: float
    baseline_s: float
    workload_s: float
    cooldown_s: float
    equilibrium_from: str = GUESS
    cooldown_from: str = GUESS

    @property
    def from_history(self) -> bool:
        return self.equilibrium_from == HISTORY and self.cooldown_from == HISTORY

    @property
    def source(self) -> str:
        """HISTORY or MODEL when both came from there; else the mix, e.g. "history+model"."""
        both = {self.equilibrium_from, self.cooldown_from}
        return both.pop() if len(both) == 1 else "+".join(s for s in (HISTORY, MODEL, GUESS) if s in both)

    @property
    def total_s(self) -> float:
        return self.equilibrium_s + self.baseline_s + self.workload_s + self.cooldown_s


@dataclass(frozen=True)
class Plan:
    campaign: Campaign
    seed: int
    runs: tuple[RunSpec, ...]
    history: History | None = None
    coolest_first: bool = True  # least-change: the first configuration's blocks from its coolest condition up
    model: History | None = None  # the rig model's walk through this campaign (campaign.model_estimate)

    def with_model(self, model: History | None) -> Plan:
        return replace(self, model=model)

    def before(self, run: RunSpec) -> str:
        """The chassis condition the run starts from: the previous run's profile, or START after a change
        of set-up or fans (and for the first run)."""
        prev = self._beside(run, -1)
        if prev is None or prev.physical != run.physical or prev.fan1_pct != run.fan1_pct:
            return START
        return prev.profile

    def phases(self, run: RunSpec, target_bytes: int | None = None) -> PhaseEstimate:
        c = self.campaign
        workload_s = float(run.workload.duration_s(target_bytes))
        skipped = self.skips_cooldown(run)
        before = self.before(run)
        eq: tuple[float | None, str] = (None, GUESS)
        base: float | None = None
        cd: tuple[float | None, str] = (0.0 if skipped else None, HISTORY if skipped else GUESS)
        for h, name in ((self.history, HISTORY), (self.model, MODEL)):
            if h is None or not h.runs:
                continue
            if eq[0] is None:
                eq = (
                    h.equilibrium_s(before, run.profile, c.equilibrium.rule, c.cooldown.mode, c.equilibrium.transition),
                    name,
                )
                base = h.baseline_s(c.baseline) if eq[0] is not None else None
            if cd[0] is None:
                cd = (h.cooldown_s(run.profile, workload_key(run.workload.__dict__), c.cooldown.mode), name)
        guess_baseline = 0.0 if c.baseline == "tail" else c.baseline_s
        if skipped:  # none either way: it follows the source the run's equilibrium came from
            cd = (0.0, eq[1] if eq[0] is not None else GUESS)
        return PhaseEstimate(
            EQUILIBRIUM_GUESS_S if eq[0] is None else eq[0],
            guess_baseline if base is None else base,
            workload_s,
            COOLDOWN_GUESS_S if cd[0] is None else cd[0],
            eq[1] if eq[0] is not None else GUESS,
            cd[1] if cd[0] is not None else GUESS,
        )

    def skips_cooldown(self, run: RunSpec) -> bool:
        return cooldown_skipped(self.campaign, run, self._beside(run, +1))

    def _beside(self, run: RunSpec, step: int) -> RunSpec | None:
        """The run before (-1) or after (+1) `run` in this plan's order: the campaign's, or one place's
        share of it, whose runs keep their index in the whole campaign."""
        at = next((i for i, r in enumerate(self.runs) if r.run_id == run.run_id), None)
        if at is None or not 0 <= at + step < len(self.runs):
            return None
        return self.runs[at + step]

    def estimate_s(self, run: RunSpec, target_bytes: int | None = None) -> float:
        return self.phases(run, target_bytes).total_s

    def total_s(self) -> float:
        return sum(self.estimate_s(r) for r in self.runs)

    def physical_changes(self) -> int:
        return sum(1 for a, b in itertools.pairwise(self.runs) if a.physical != b.physical)

    def condition_changes(self) -> int:
        """Consecutive runs in another chassis condition (or hardware): transitions the rig waits out."""
        return sum(
            1
            for a, b in itertools.pairwise(self.runs)
            if (a.physical, a.profile, a.fan1_pct) != (b.physical, b.profile, b.fan1_pct)
        )

    def design(self) -> dict[str, Any]:
        """How the order was drawn, for the manifest."""
        c = self.campaign
        out: dict[str, Any] = {"seed": self.seed, "randomize": c.randomize, "order": c.order}
        out["grouped_by"] = [k for k in PHYSICAL if k in c.factors]
        if c.order in BLOCKED:
            out["blocks"] = [k for k in CONDITION if k in c.factors or k == "profile"]
        if c.order == "least-change":
            first = "coolest" if self.coolest_first else "hottest"
            out["block_order"] = f"by chassis air target, {first} first, the way reversed at each hardware change"
        return out


def make_plan(campaign: Campaign, seed: int | None = None, instance: str = "", history: History | None = None) -> Plan:
    """instance: the campaign folder's start stamp; run IDs are <campaign>-<instance>-<index>. history:
    the rig's recorded runs, for the estimates."""
    seed = seed if seed is not None else campaign.seed
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    f = campaign.factors
    physical_keys = [k for k in PHYSICAL if k in f]
    blocks = [
        dict(zip(physical_keys, combo, strict=True)) for combo in itertools.product(*(f[k] for k in physical_keys))
    ]
    if campaign.randomize:
        rng.shuffle(blocks)
    else:
        blocks.sort(key=lambda b: SLOTS.index(b["slot"]) if "slot" in b else 0)
    # least-change: whether the first configuration goes coolest first (drawn only then: the other orders
    # keep theirs from the same seed)
    upward = rng.random() < 0.5 if campaign.order == "least-change" else True
    runs: list[RunSpec] = []
    for n, block in enumerate(blocks):
        cells = list(
            itertools.product(
                f["profile"], f.get("fan1_pct", (None,)), campaign.workloads, range(1, campaign.repeats + 1)
            )
        )
        if "hctm" in f:  # only then: a campaign without the factor keeps its order from the same seed
            cells = [(*cell, HctmLevel.parse(level)) for cell in cells for level in f["hctm"]]
        if campaign.randomize:
            rng.shuffle(cells)
        if campaign.order == "blocks":
            cells = _in_blocks(cells)
        elif campaign.order == "least-change":
            cells = _by_air(cells, campaign.profiles, coolest_first=upward == (n % 2 == 0))
        for profile, fan1, workload, repeat, *hctm in cells:
            index = len(runs) + 1
            runs.append(
                RunSpec(
                    index,
                    "-".join(x for x in (campaign.name[:40], instance, f"{index:03d}") if x),
                    block,
                    str(profile),
                    None if fan1 is None else float(fan1),
                    workload,
                    repeat,
                    hctm[0] if hctm else None,
                )
            )
    return Plan(campaign, seed, tuple(runs), history, upward)


def _blocks(cells: list[tuple[Any, ...]]) -> dict[tuple[Any, Any], list[tuple[Any, ...]]]:
    """The cells (profile, fan1, workload, repeat[, hctm]) by chassis condition (profile, fan1), in the order
    each condition first appears, each condition's cells in their order."""
    blocks: dict[tuple[Any, Any], list[tuple[Any, ...]]] = {}
    for cell in cells:
        blocks.setdefault((cell[0], cell[1]), []).append(cell)
    return blocks


def _in_blocks(cells: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The cells gathered by chassis condition, each condition's at the place of its first: from a random
    order, the blocks in random order and the cells of each in random order (and the random order itself
    when every condition has one cell)."""
    return [cell for block in _blocks(cells).values() for cell in block]


def cooldown_skipped(campaign: Campaign, run: RunSpec, after: RunSpec | None) -> bool:
    """`before_change = "skip"` and the next run in another chassis condition (or set-up), not one nearly
    the same (nearly_same): the plan's estimate and the run's phases decide it here alike."""
    if campaign.cooldown.before_change != "skip" or after is None or nearly_same(campaign, run, after):
        return False
    return (run.physical, run.profile, run.fan1_pct) != (after.physical, after.profile, after.fan1_pct)


def nearly_same(campaign: Campaign, a: RunSpec, b: RunSpec) -> bool:
    """Two runs' chassis conditions under the same set-up and fans with fixed air targets less than
    MIN_STEP_C apart (not the same condition): a change between them is not driven (campaign.transition),
    so the cool-down before it is kept and settled as before a run in the same condition, where skipped
    it left the workload's heat to a passive equilibrium (the Puget sample, single-GPU load to dual-GPU
    idle at the top slot: 280 rig s; order = "least-change" puts such profiles side by side)."""
    if a.physical != b.physical or (a.profile, a.fan1_pct) == (b.profile, b.fan1_pct):
        return False
    pa, pb = campaign.profiles[a.profile], campaign.profiles[b.profile]
    fans_a = (pa.fan0_pct, pa.fan1_pct if a.fan1_pct is None else a.fan1_pct)
    fans_b = (pb.fan0_pct, pb.fan1_pct if b.fan1_pct is None else b.fan1_pct)
    if fans_a != fans_b or pa.air_c is None or pb.air_c is None or pa.trace is not None or pb.trace is not None:
        return False
    return abs(pa.air_c - pb.air_c) < MIN_STEP_C


def _heat_key(profile: ChassisProfile, fan1_pct: float | None) -> tuple[float, float, float]:
    """Where a chassis condition sits from cool to hot: its air target (a profile without a fixed one, the
    heater off or a recorded run's trace, first), then the less slot and chassis fan the hotter."""
    air = float("-inf") if profile.air_c is None else profile.air_c
    fan1 = profile.fan1_pct if fan1_pct is None else fan1_pct
    return (air, -fan1, -profile.fan0_pct)


def _by_air(
    cells: list[tuple[Any, ...]], profiles: dict[str, ChassisProfile], coolest_first: bool
) -> list[tuple[Any, ...]]:
    """The cells gathered by chassis condition, the blocks from the coolest condition to the hottest, or the
    reverse; each block's cells keep their order, conditions alike in heat their drawn order."""
    blocks = _blocks(cells)
    ordered = sorted(blocks, key=lambda k: _heat_key(profiles[str(k[0])], k[1]), reverse=not coolest_first)
    return [cell for key in ordered for cell in blocks[key]]


ORDERS_DRAWN = 50


def drawn_orders_s(
    campaign: Campaign, history: History | None, draws: int = ORDERS_DRAWN, model: History | None = None
) -> list[float] | None:
    """The estimated totals of `draws` orders (seeds 1 to draws), sorted: what a run that draws its own seed
    may take, the rig time of its chassis changes depending on the order; None when the order is fixed
    (a seed in the file, or no randomisation)."""
    if campaign.seed is not None or not campaign.randomize:
        return None
    return sorted(
        make_plan(campaign, seed, history=history).with_model(model).total_s() for seed in range(1, draws + 1)
    )
