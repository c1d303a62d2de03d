"""`thermrig lab plan`: which place would run which run of a campaign, and the planned time."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from thermrig.cli.campaign_cmds import HistoryOpt, PlanModelOpt, SeedOpt
from thermrig.cli.durations import hms
from thermrig.cli.lab_common import labgrid_modules, pairs
from thermrig.cli.user_errors import user_errors
from thermrig.lab.rig_place import tag_value


@user_errors
def plan(
    campaign_file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The campaign file.")],
    coordinator: Annotated[
        str, typer.Option("--coordinator", "-x", envvar="LG_COORDINATOR", help="Plan on this lab's places.")
    ] = "",
    tag: Annotated[list[str], typer.Option("--tag", "-t", help="With -x: only places with this tag.")] = [],  # noqa: B006
    places: Annotated[int, typer.Option("--places", "-n", min=1, help="Without -x: this many places.")] = 1,
    seed: SeedOpt = None,
    history: HistoryOpt = Path("thermrig-runs"),
    model: PlanModelOpt = True,
) -> None:
    """Which place would run which run, and the campaign's planned time on one place and on the lab.

    A run goes to a place whose fixed hardware tags (slot, heatsink, airflow) match its factors without
    an operator prompt, else to a place where that hardware is not fixed (the operator sets it up), never
    to a place whose fixed hardware differs. Without --coordinator, the places are alike and fix nothing. The
    estimates are `thermrig plan`'s: recorded runs, else the calibrated rig model, else fixed guesses.
    """
    from thermrig.campaign.history import History
    from thermrig.campaign.plan import make_plan
    from thermrig.campaign.plan_estimate import sources
    from thermrig.campaign.spec import load_campaign
    from thermrig.cli.estimate_bar import estimated

    c = load_campaign(campaign_file)
    p = estimated(make_plan(c, seed, history=History.read(history, c.rig_name)), history, model)
    wanted = {k: tag_value(v) for k, v in pairs(tag, "--tag", "board=sim").items()} if coordinator else {}
    if coordinator:
        labgrid_modules()  # says how to install the lab extra when labgrid is missing
    from thermrig.lab.plan_places import plan_places

    planned = plan_places(p, coordinator, wanted, places)
    split = planned.assignment
    table = Table(title=f"{p.campaign.name}: {len(p.runs)} runs on {len(planned.places)} places")
    for column in ("place", "fixed", "runs", "operator prompts", "planned"):
        table.add_column(column)
    for hw, lane in zip(planned.places, split.lanes, strict=True):
        fixed = planned.fixed(hw) or "-"
        table.add_row(lane.place, fixed, str(len(lane.runs)), str(len(lane.prompts)), hms(lane.busy_s))
    Console(width=200).print(table)
    one = planned.one_place_s
    typer.echo(
        f"planned {hms(one)} on one place, {hms(split.makespan_s)} on {len(planned.places)} places "
        f"({one / split.makespan_s:.2f}x); {sources(p)}"
    )
