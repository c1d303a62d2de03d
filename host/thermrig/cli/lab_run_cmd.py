"""`thermrig run FILE --lab COORDINATOR` (or a campaign with a [lab] table): the campaign on every
matching place of a lab at once (thermrig.lab.campaign), shown as a log, one line per place and phase."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.prompt import Confirm

from thermrig.campaign.lab_table import LabTable
from thermrig.campaign.plan import Plan
from thermrig.campaign.progress import Progress
from thermrig.campaign.rundir import CampaignState
from thermrig.cli.lab_common import labgrid_modules
from thermrig.cli.readback import say_unread
from thermrig.db.server_preflight import require_ready
from thermrig.db.target import resolve_settings
from thermrig.lab.errors import LabError
from thermrig.lab.preflight import preflight
from thermrig.lab.rig_place import tag_value
from thermrig.testbed.signals import signals_stop

if TYPE_CHECKING:
    from thermrig.lab.campaign import LabOutcome


class LogEvents:
    """Each place's phases as log lines, notes, and the operator asked at a place (one at a time)."""

    def __init__(self, console: Console, state: CampaignState, total: int, no_prompt: bool) -> None:
        self.console = console
        self.state = state
        self.total = total
        self.no_prompt = no_prompt
        self._lock = threading.Lock()
        self._shown: dict[str, tuple[str, str]] = {}

    def _say(self, line: str) -> None:
        with self._lock:
            self.console.print(escape(line), soft_wrap=True, highlight=False)

    def progress(self, place: str, progress: Progress) -> None:
        key = (progress.run.run_id if progress.run else "", progress.phase)
        if self._shown.get(place) == key or progress.phase == "done":
            return
        self._shown[place] = key
        done = len(self.state.completed)
        self._say(f"{place}: {key[0]} ({done}/{self.total} done): {progress.phase} {progress.detail}".rstrip())

    def note(self, message: str) -> None:
        self._say(message)

    def prompt(self, place: str, message: str) -> None:
        if self.no_prompt:
            return
        with self._lock:
            while not Confirm.ask(f"[bold]{escape(place)}[/]: {escape(message)}", console=self.console):
                pass


def run_on_lab(
    campaign_file: Path,
    plan: Plan,
    state: CampaignState,
    coordinator: str | None,
    no_prompt: bool,
    destroy: bool,
    db_check: bool = True,
) -> None:
    c = plan.campaign
    table = c.lab or LabTable()
    address = preflight(plan, coordinator, destroy)
    labgrid_modules()
    try:
        from thermrig.lab.campaign import LabCampaign, LabRequest
    except ImportError as exc:  # pragma: no cover - labgrid_modules said it already
        raise LabError(f"labgrid is not installed ({exc.name}): pip install 'thermrig[lab]'") from exc
    console = Console()
    influx = resolve_settings()
    if db_check:
        require_ready(influx)  # before any place is reserved: the server takes the points and gives them back
    wanted = " ".join(f"{k}={v}" for k, v in sorted(table.tags.items())) or "any"
    console.print(
        f"campaign {c.name}: {len(plan.runs)} runs (seed {plan.seed}), {len(state.completed)} done; "
        f"on the lab at {address} (places: {wanted}); folder {state.folder}; data to {influx.describe()}",
        soft_wrap=True,
        highlight=False,
    )
    events = LogEvents(console, state, len(plan.runs), no_prompt)
    request = LabRequest(
        address,
        {k: tag_value(v) for k, v in table.tags.items()},
        table.places,
        table.ssh_key,
        table.insecure,
        stored_gains=True,
    )
    lab = LabCampaign(plan, state, influx, request, events)
    again = f"`thermrig run {campaign_file} --lab {address} --resume --out {state.folder}`"
    try:
        with signals_stop(lab.stop, (signal.SIGTERM,)):  # `kill`: the campaign stops as on Ctrl-C
            outcome = lab.run()
    except KeyboardInterrupt:
        console.print(f"[yellow]campaign interrupted[/]: every place released, rigs safe; {again} continues")
        raise typer.Exit(130) from None
    _say_outcome(console, plan, state, outcome, again)


def _say_outcome(console: Console, plan: Plan, state: CampaignState, outcome: LabOutcome, again: str) -> None:
    """How the campaign ended on the lab: its runs ok, failed or not run, and where; exit 1 on a failed run
    or on summaries that could not be read back."""
    c = plan.campaign
    ok = len([r for r in plan.runs if r.run_id in state.completed])
    places = ", ".join(outcome.places)
    if outcome.unsent:
        console.print(
            f"[yellow]{len(outcome.unsent)} runs' points are not all in InfluxDB[/] (kept in their spools): "
            f"{', '.join(outcome.unsent)}; `thermrig db drain` sends them once InfluxDB answers",
            soft_wrap=True,
        )
    if ok < len(plan.runs):
        for run_id, why in outcome.failed.items():
            console.print(f"failed run {run_id} on {escape(why)}", soft_wrap=True, highlight=False)
        if outcome.not_run:
            console.print(f"not run (no place left that can): {', '.join(outcome.not_run)}", soft_wrap=True)
        where = outcome.failed_places()
        failed = ", ".join(outcome.failed) or "none"
        console.print(
            f"[yellow]campaign {c.name} finished with failed runs[/] ({failed})"
            + (f" on {', '.join(where)}" if where else "")
            + f": {ok} of {len(plan.runs)} ok; {again} reruns them",
            soft_wrap=True,
            highlight=False,
        )
        raise typer.Exit(1)
    error = outcome.readback_error
    if say_unread(console, c.name, ok, len(plan.runs), error, outcome.unanalysed, outcome.unsent, state.folder):
        raise typer.Exit(1)
    console.print(
        f"[green]campaign {c.name} finished[/] on {places}: {ok} of {len(plan.runs)} runs ok; "
        + ("every summary complete" if not outcome.unanalysed else f"summary incomplete for {len(outcome.unanalysed)}")
        + f"; manifests in {state.folder}",
        soft_wrap=True,
    )
