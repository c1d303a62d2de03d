"""`thermrig analyze RUN|CAMPAIGN`: recompute the summaries from InfluxDB and write them back."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from thermrig.analysis.influx_source import campaign_of
from thermrig.analysis.run_analysis import RunSummary
from thermrig.analysis.summary_store import store_campaign, store_run
from thermrig.campaign.rundir import unsent_runs
from thermrig.cli.fitted_tables import fitted
from thermrig.cli.late import complete_summaries
from thermrig.cli.user_errors import user_errors
from thermrig.db.target import resolve_settings


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def runs_table(summaries: list[RunSummary], title: str) -> Table:
    table = Table(title=title)
    for col in ("run", "factors", "onset s", "depth %", "ctrl at onset °C", "recovery s", "data"):
        table.add_column(col)
    for s in summaries:
        factors = " ".join(f"{k}={v}" for k, v in s.tags.items() if k in ("slot", "heatsink", "profile", "workload"))
        ctrl = next((v for k, v in s.at_onset_c.items() if k.endswith("drive_ctrl_c")), None)
        table.add_row(
            s.run,
            factors,
            _num(s.throttle.onset_s, ".0f"),
            _num(s.throttle.depth_pct, ".0f"),
            _num(ctrl, ".1f"),
            _num(s.recovery_s, ".0f"),
            "complete" if s.complete else "; ".join(s.missing),
        )
    return table


@user_errors
def analyze(
    name: Annotated[str, typer.Argument(help="A campaign name, or one run id (the run tag in InfluxDB).")],
) -> None:
    """Recompute run summaries (and for a campaign its cells, factor effects and sensor ranking) from
    what InfluxDB holds, and write them back: run_summary, campaign_summary, campaign_effect, sensor_rank.

    Definitions: docs/analysis.md."""
    settings = resolve_settings(start_local=False)
    console = Console(stderr=True)
    campaign, run = campaign_of(settings, name)
    out = Console()
    complete_summaries(settings, console, campaign)
    pending = set(unsent_runs(campaign))
    if run is not None:
        with console.status(f"analysing run {run}"):
            summary = store_run(settings, campaign, run)
        out.print(fitted(runs_table([summary], f"{run}: run_summary rewritten"), out, label=0))
        return
    with console.status(f"analysing campaign {campaign}"):
        a = store_campaign(settings, campaign, pending)
    title = f"{campaign}: {len(a.analysed)} run summaries rewritten"
    if a.pending:
        title += f" ({len(a.pending)} left as they are: points still spooled)"
    out.print(fitted(runs_table(a.summaries, title), out, label=0))
    if a.ranking:
        out.print(f"best onset predictor: {a.ranking[0].as_predictor()}", markup=False)
    out.print(
        f"campaign_summary: {len(a.cells)} cells; campaign_effect: {len(a.effects)} effects; "
        f"sensor_rank: {len(a.ranking)} sensors",
        markup=False,
    )
