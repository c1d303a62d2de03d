"""The run plan: every combination of factor levels and workloads, repeated, in an order that is random
within each physical configuration (so the operator changes hardware as rarely as possible) and
reproducible from the recorded seed."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any

from thermrig.campaign.spec import PHYSICAL, Campaign
from thermrig.drive.thermal_config import HctmLevel
from thermrig.fio.workloads import Workload
from thermrig.hardware.profiles import SLOTS

EQUILIBRIUM_GUESS_S = 300.0  # for the estimate only: the real wait is measured
COOLDOWN_GUESS_S = 300.0


@dataclass(frozen=True)
class RunSpec:
    index: int
    run_id: str
    physical: dict[str, Any]  # slot, heatsink, airflow: what the operator sets up
    profile: str
    fan1_pct: float | None
    workload: Workload
    repeat: int
    hctm: HctmLevel | None = None  # the hctm factor's level; None: the campaign leaves HCTM alone

    def tags(self) -> dict[str, str]:
        out = {k: str(v) for k, v in self.physical.items()}
        out.update(profile=self.profile, workload=self.workload.name)
        if self.hctm is not None:
            out["hctm"] = self.hctm.tag
        return out


@dataclass(frozen=True)
class Plan:
    campaign: Campaign
    seed: int
    runs: tuple[RunSpec, ...]

    def estimate_s(self, run: RunSpec, target_bytes: int | None = None) -> float:
        return EQUILIBRIUM_GUESS_S + self.campaign.baseline_s + run.workload.duration_s(target_bytes) + COOLDOWN_GUESS_S

    def physical_changes(self) -> int:
        return sum(1 for a, b in itertools.pairwise(self.runs) if a.physical != b.physical)


def make_plan(campaign: Campaign, seed: int | None = None, instance: str = "") -> Plan:
    """instance: the campaign folder's start stamp; run IDs are <campaign>-<instance>-<index>."""
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
    runs: list[RunSpec] = []
    for block in blocks:
        cells = list(
            itertools.product(
                f["profile"], f.get("fan1_pct", (None,)), campaign.workloads, range(1, campaign.repeats + 1)
            )
        )
        if "hctm" in f:  # only then: a campaign without the factor keeps its order from the same seed
            cells = [(*cell, HctmLevel.parse(level)) for cell in cells for level in f["hctm"]]
        if campaign.randomize:
            rng.shuffle(cells)
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
    return Plan(campaign, seed, tuple(runs))
