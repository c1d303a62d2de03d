"""A campaign begun in its folder, or resumed there: its state (seed, start stamp, runs done) kept in
the folder, and its plan drawn again from the same seed and stamp, so a resume runs what is left."""

from __future__ import annotations

from pathlib import Path

from thermrig.campaign.history import History
from thermrig.campaign.plan import Plan, make_plan
from thermrig.campaign.rundir import CampaignState, instance_stamp
from thermrig.campaign.spec import Campaign, CampaignError


def begin(c: Campaign, folder: Path, resume: bool, history: History | None = None) -> tuple[Plan, CampaignState]:
    """The plan and the state saved in `folder`; an earlier run there is refused unless `resume`."""
    state = CampaignState.load(folder)
    if state is not None and not resume:
        raise CampaignError(f"{folder} holds an earlier run of this campaign: pass --resume, or choose --out")
    seed, started = (state.seed, state.started) if state else (None, instance_stamp())
    plan = make_plan(c, seed, started, history=history)
    state = state or CampaignState(folder, plan.seed, started=started)
    state.save()
    return plan, state
