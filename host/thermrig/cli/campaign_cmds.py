"""`thermrig plan` and `thermrig run`: campaigns from a TOML file."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.prompt import Confirm
from rich.table import Table

from thermrig.campaign.begin import begin
from thermrig.campaign.history import History
from thermrig.campaign.on_rig import CampaignInterrupted, run_campaign
from thermrig.campaign.orchestrator import CampaignHooks, Orchestrator
from thermrig.campaign.plan import Plan, drawn_orders_s, make_plan
from thermrig.campaign.plan_estimate import sources
from thermrig.campaign.progress import Progress
from thermrig.campaign.run_phases import Prompt
from thermrig.campaign.rundir import CampaignState
from thermrig.campaign.spec import load_campaign
from thermrig.cli.durations import hms
from thermrig.cli.estimate_bar import estimated
from thermrig.cli.fitted_tables import fitted
from thermrig.cli.readback import say_unread
from thermrig.cli.user_errors import user_errors
from thermrig.db.server_preflight import require_ready
from thermrig.db.target import resolve_settings
from thermrig.protocol.channels import ChannelKind

FileArg = Annotated[Path, typer.Argument(help="The campaign file (TOML, see docs/campaigns.md).")]
SeedOpt = Annotated[int | None, typer.Option(help="Order the runs with this seed (default: the file's).")]
HistoryOpt = Annotated[
    Path, typer.Option(help="Campaign folders whose run manifests the estimates learn from (this rig's runs).")
]
PlanModelOpt = Annotated[
    bool,
    typer.Option(
        help="Where no recorded run is like a run, estimate it on the calibrated rig model (the plan's "
        "own transitions and rules, computed in seconds, kept under --history for `thermrig run`); "
        "--no-model: the model's estimate kept from an earlier plan, else fixed guesses of 300 s."
    ),
]


def _plan_table(plan: Plan, done: set[str] | None = None) -> Table:
    t = Table(title=f"campaign {plan.campaign.name}: {len(plan.runs)} runs, seed {plan.seed}")
    for col in ("#", "run", "slot", "heatsink", "airflow", "profile", "fan1 %", "hctm", "workload", "repeat", "est."):
        t.add_column(col)
    for r in plan.runs:
        mark = " (done)" if done and r.run_id in done else ""
        t.add_row(
            str(r.index),
            r.run_id + mark,
            str(r.physical.get("slot", "-")),
            str(r.physical.get("heatsink", "-")),
            str(r.physical.get("airflow", "-")),
            r.profile,
            "-" if r.fan1_pct is None else f"{r.fan1_pct:g}",
            "-" if r.hctm is None else r.hctm.label,
            r.workload.name,
            str(r.repeat),
            hms(plan.estimate_s(r)),
        )
    return t


@user_errors
def plan(
    campaign_file: FileArg,
    seed: SeedOpt = None,
    history: HistoryOpt = Path("thermrig-runs"),
    model: PlanModelOpt = True,
) -> None:
    """Print the run order and the estimated duration, without running anything.

    Each run's equilibrium and cool-down come from this rig's recorded runs where one is like it, else
    from the calibrated rig model walked through the plan in its order with the campaign's rules (the
    simulated rig computed in this process, the drive model's heat for each workload), else from fixed
    guesses; the last line says which."""
    c = load_campaign(campaign_file)
    h = History.read(history, c.rig_name)
    console = Console()
    p = make_plan(c, seed, history=h)
    p = estimated(p, history, model)
    console.print(fitted(_plan_table(p), console, label=1, compact=True))
    phases = [p.phases(r) for r in p.runs]
    total = sum(e.total_s for e in phases)
    source = sources(p) if p.runs else "no runs"
    by_phase = ", ".join(
        f"{name} {hms(sum(getattr(e, name + '_s') for e in phases))}"
        for name in ("equilibrium", "baseline", "workload", "cooldown")
    )
    console.print(
        f"estimated {hms(total)} ({by_phase}); {source}; "
        f"{p.physical_changes()} hardware changes by the operator, {p.condition_changes()} chassis changes"
    )
    if seed is None and (orders := drawn_orders_s(c, h, model=p.model)):
        console.print(
            f"this order is seed {p.seed}'s; `thermrig run` draws its own (no seed in the file): "
            f"{len(orders)} other orders (seeds 1-{len(orders)}) estimated {hms(orders[0])} to {hms(orders[-1])}, "
            f"median {hms(statistics.median(orders))}"
        )


def _eta_basis(p: Plan) -> str:
    """What the running campaign's ETA is estimated from, for the live view."""
    return sources(p).removeprefix("estimates from ")


def _view(progress: Progress, eta_basis: str = "") -> Group:
    r = progress.run
    current = min(progress.done + 1, progress.total)
    head = f"run {current}/{progress.total}" + (f" [bold]{r.run_id}[/]" if r else "")
    t = Table(show_header=False, title=head)
    if r:
        t.add_row("factors", ", ".join(f"{k}={v}" for k, v in r.tags().items()))
    t.add_row("phase", f"[bold]{progress.phase}[/] {progress.detail}")
    if progress.phase == "done":
        t.add_row("ETA", "finished")
    else:
        t.add_row("ETA", f"about {hms(progress.eta_s)} left ({eta_basis or 'estimate'})")
    if progress.influx:
        t.add_row("InfluxDB", f"[yellow]{escape(progress.influx)}[/]")
    if progress.latest:
        latest = progress.latest
        tcs = latest.channels.of_kind(ChannelKind.THERMOCOUPLE)
        temps = ", ".join(f"{c.name} {latest.temps[c.key].value:.2f} °C" for c in tcs)
        t.add_row("rig", f"{temps}, heater {latest.heater_pct:.0f} %")
    if progress.live and progress.phase == "workload":
        s = progress.live
        t.add_row("fio", f"{(s.read_bps + s.write_bps) / 1e6:,.1f} MB/s, {s.read_iops + s.write_iops:,.0f} IOPS")
    return Group(t)


def _say_unsent(console: Console, runs: list[str]) -> None:
    """The runs whose points are not all in InfluxDB, and the command that sends them."""
    if runs:
        console.print(
            f"[yellow]{len(runs)} runs' points are not all in InfluxDB[/] (kept in their spools): "
            f"{', '.join(runs)}; `thermrig db drain` sends them once InfluxDB answers",
            soft_wrap=True,
        )


def _progress_printer(name: str, console: Console, live: Live, eta_basis: str = "") -> Callable[[Progress], None]:
    """The live view on a terminal; otherwise a log, one line per phase and one when InfluxDB stops or
    starts answering."""
    shown: list[tuple[str, str]] = []
    outage = [""]

    def progress(pr: Progress) -> None:
        live.update(_view(pr, eta_basis))
        if console.is_terminal:
            return
        key = (pr.run.run_id if pr.run else "", pr.phase)
        if not shown or shown[-1] != key:
            shown.append(key)
            if pr.phase == "done":
                print(f"campaign {name}: done, {pr.detail}", flush=True)
            else:
                where = f"run {min(pr.done + 1, pr.total)}/{pr.total} {key[0]}"
                print(f"{where}: {pr.phase} {pr.detail}".rstrip(), flush=True)
        if pr.influx != outage[-1]:
            outage.append(pr.influx)
            print(pr.influx or "InfluxDB answers again: sending the spooled points", flush=True)

    return progress


@user_errors
def run(
    campaign_file: FileArg,
    out: Annotated[Path | None, typer.Option(help="Campaign folder (default: ./thermrig-runs/<campaign>).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted campaign where it stopped.")] = False,
    no_prompt: Annotated[bool, typer.Option("--no-prompt", help="Do not ask the operator (simulated rig).")] = False,
    destroy: Annotated[bool, typer.Option("--destroy", help="Allow writing over a block device (see docs).")] = False,
    lab: Annotated[
        str | None,
        typer.Option("--lab", metavar="COORDINATOR", help="Run on a lab's places (labgrid HOST:PORT; docs/lab.md)."),
    ] = None,
    history: Annotated[
        Path | None,
        typer.Option(help="Campaign folders the ETA learns from (this rig's runs; default: the campaign folder's)."),
    ] = None,
    model: Annotated[
        bool,
        typer.Option(
            help="Where no recorded run is like a run, estimate the ETA on the calibrated rig model before "
            "starting (as `thermrig plan` does); by default the model's estimate an earlier `thermrig plan` "
            "kept under --history, else fixed guesses."
        ),
    ] = False,
    db_check: Annotated[
        bool,
        typer.Option(
            help="Check InfluxDB before any run (as `thermrig db check`) and stop on a failure; --no-db-check: "
            "start anyway (a server you know is down: the points wait in the spools for `thermrig db drain`)."
        ),
    ] = True,
) -> None:
    """Run a campaign: per run, set up, reach equilibrium, baseline, fio, cool down; all into InfluxDB."""
    console = Console()
    c = load_campaign(campaign_file)
    folder = (out or Path("thermrig-runs") / c.name).resolve()
    where = history or folder.parent  # the rig's earlier campaigns, and this one's runs so far
    h = History.read(where, c.rig_name)
    p, state = begin(c, folder, resume, h)
    p = estimated(p, where, model)
    if lab or c.lab is not None:  # on a lab of rigs: every matching place at once (cli/lab_run_cmd.py)
        from thermrig.cli.lab_run_cmd import run_on_lab

        run_on_lab(campaign_file, p, state, lab, no_prompt, destroy, db_check)
        return
    influx = resolve_settings()
    if db_check:
        require_ready(influx)  # before any rig time: the server takes the points and gives them back
    console.print(
        f"campaign {c.name}: {len(p.runs)} runs (seed {p.seed}), {len(state.completed)} done; "
        f"folder {folder}; data to {influx.describe()}; ETA {_eta_basis(p)}"
    )
    with Live(console=console, refresh_per_second=4) as live:
        hooks = CampaignHooks(_asker(console, no_prompt), _progress_printer(c.name, console, live, _eta_basis(p)))
        try:
            orch = run_campaign(
                p,
                state,
                influx,
                hooks,
                destroy,
                lambda warning: console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True),
                stored_gains=True,
            )
        except CampaignInterrupted as stopped:
            live.stop()
            console.print(
                f"[yellow]campaign interrupted[/]: rig safe, data {'spooled' if stopped.unsent else 'flushed'}; "
                f"`thermrig run {campaign_file} --resume` continues"
            )
            _say_unsent(console, stopped.unsent)
            raise typer.Exit(130) from None
    _say_finished(console, campaign_file, folder, p, state, orch)


def _asker(console: Console, no_prompt: bool) -> Prompt:
    """The operator asked until they confirm (no_prompt: nobody is asked)."""

    def ask(message: str) -> None:
        if no_prompt:
            return
        while not Confirm.ask(message, console=console):
            pass

    return ask


def _say_finished(
    console: Console, campaign_file: Path, folder: Path, p: Plan, state: CampaignState, orch: Orchestrator
) -> None:
    """How the campaign ended: its runs ok or failed, its summaries and results written or not; exit 1 on a
    failed run or on summaries that could not be read back."""
    c = p.campaign
    _say_unsent(console, orch.unsent)
    if len(state.completed) < len(p.runs):
        console.print(
            f"[yellow]campaign {c.name} finished with failed runs[/]: {len(state.completed)} of {len(p.runs)} ok; "
            f"each failed run's error is in its manifest.json under {folder}; "
            f"`thermrig run {campaign_file} --resume --out {folder}` retries them"
        )
        raise typer.Exit(1)
    done, total, error = len(state.completed), len(p.runs), orch.readback_error
    if say_unread(console, c.name, done, total, error, orch.unanalysed, orch.unsent, folder):
        raise typer.Exit(1)
    if orch.unanalysed:
        console.print(
            f"[yellow]campaign {c.name} finished[/]: {len(state.completed)} of {len(p.runs)} runs ok, "
            f"{len(state.completed) - len(orch.unanalysed)} summaries complete; "
            f"summary incomplete (complete=false) for "
            f"{', '.join(orch.unanalysed)}: it is completed once its points are all in InfluxDB "
            f"(`thermrig db drain`); manifests in {folder}",
            soft_wrap=True,
        )
    else:
        console.print(
            f"[green]campaign {c.name} finished[/]: {len(state.completed)} of {len(p.runs)} runs ok, "
            f"every summary complete; manifests in {folder}",
            soft_wrap=True,
        )
    if not orch.campaign_results:
        console.print(
            "[yellow]the campaign's results are not written yet[/] "
            + (f"({escape(orch.readback_error)}): " if orch.readback_error else "(InfluxDB did not answer): ")
            + ("`thermrig db drain` writes them" if orch.unanalysed else f"`thermrig analyze {c.name}` writes them"),
            soft_wrap=True,
        )
