"""The plan's estimates with the rig model's walk (campaign.plan_estimate), its progress on stderr while
the model walks and a line when it cannot."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from thermrig.campaign.plan import Plan
from thermrig.campaign.plan_estimate import with_model


def estimated(plan: Plan, folder: Path | None, run_model: bool) -> Plan:
    """with_model, a bar (runs walked) shown only while the model walks."""
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("estimating on the rig model"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = bar.add_task("model", total=len(plan.runs))
    shown = False  # stopped only where it was started: rich prints a blank line at a stop on a pipe

    def progressed(done: int, total: int) -> None:
        nonlocal shown
        if not shown:
            bar.start()  # the bar shows from the first run walked
            shown = True
        bar.update(task, completed=done)

    try:
        return with_model(
            plan,
            folder,
            run_model,
            progressed,
            lambda why: console.print(f"[yellow]the rig model could not walk this plan[/] ({why}): fixed guesses"),
        )
    finally:
        if shown:
            bar.stop()
