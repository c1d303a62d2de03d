"""`thermrig throttle CAMPAIGN`: throttle onset and depth per run, read back from InfluxDB."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from thermrig.analysis.published import DEPTH_PP, PUGET_RUNTIME_S
from thermrig.analysis.throttle import DROP, SUSTAIN, TAIL_S
from thermrig.analysis.throttle_table import ThrottleRow
from thermrig.campaign.throttle_rows import campaign_throttle
from thermrig.cli.fitted_tables import fitted
from thermrig.cli.late import say_incomplete
from thermrig.cli.user_errors import user_errors
from thermrig.db.target import resolve_settings


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def render(rows: list[ThrottleRow], compare: bool, title: str, incomplete: frozenset[str] = frozenset()) -> Table:
    table = Table(title=title)
    numeric = ("s", "MB/s before", "onset s", "depth %")
    hctm = any(r.hctm != "-" for r in rows)  # a campaign with the hctm factor: its level per run
    for col in ("slot", "profile", "heatsink", *(("hctm",) if hctm else ()), "workload", *numeric, "cause"):
        table.add_column(col, justify="right" if col in numeric else "left")
    if compare:
        for col in ("published", "onset ok", "depth ok"):
            table.add_column(col)
    notes = any(r.note for r in rows)
    if notes:
        table.add_column("data")
    for r in sorted(rows, key=lambda r: (r.profile, r.slot, r.heatsink, r.hctm)):
        cells = [
            r.slot,
            r.profile,
            r.heatsink,
            *((r.hctm,) if hctm else ()),
            r.workload + (" (incomplete)" if r.run in incomplete else ""),
            str(r.seconds),
            _num(None if r.plateau_bps is None else r.plateau_bps / 1e6, ",.0f"),
            _num(r.onset_s, ".0f") if r.onset_s is not None or r.depth_pct is None else "none",
            _num(r.depth_pct, ".0f"),
            r.onset_cause or "-",
        ]
        if compare:
            pub = r.published()
            if pub is None or r.depth_pct is None:
                cells += ["-", "-", "-"]
            else:
                onset_ok, depth_ok = pub.judge(r.onset_s, r.depth_pct)
                comparable = r.seconds >= PUGET_RUNTIME_S - 5  # depth is defined on 120 s writes
                cells += [
                    f"{pub.depth_pct:.0f} % after {pub.onset_s:g} s",
                    "yes" if onset_ok else "NO",
                    ("yes" if depth_ok else "NO") if comparable else f"n/a ({r.seconds} s run)",
                ]
        if notes:
            cells.append(r.note or "complete")
        table.add_row(*cells)
    return table


@user_errors
def throttle(
    campaign: Annotated[str, typer.Argument(help="Campaign name (the campaign tag in InfluxDB).")],
    compare: Annotated[
        bool, typer.Option("--compare", help="Beside the Puget tables (seed 001), with the calibration tolerances.")
    ] = False,
    runs_from: Annotated[
        Path | None,
        typer.Option("--runs-from", help="Only the runs of this campaign folder (thermrig run --out)."),
    ] = None,
) -> None:
    """Throttle onset and depth per run, from fio's per-second bandwidth stored in InfluxDB.

    Onset: seconds until the first of two seconds in a row 10 % under the plateau (median of seconds
    2-4) that is not a host stall, with its cause (docs/analysis.md); depth: how far the mean of the
    last 30 s falls below that plateau."""
    settings = resolve_settings(start_local=False)
    console = Console() if sys.stdout.isatty() else Console(width=160)  # a pipe or a log keeps whole lines
    say_incomplete(console, campaign)  # reading writes nothing: `thermrig analyze` completes them
    if runs_from is not None and not (runs_from / "state.json").exists():
        raise typer.BadParameter(f"{runs_from} is not a campaign folder (no state.json)")
    found = campaign_throttle(settings, campaign, runs_from)
    rows, unsent = found.rows, found.unsent
    if not rows:
        console.print(f"no fio data for campaign {campaign!r} in InfluxDB", markup=False)
        raise typer.Exit(1)
    title = f"{campaign}: throttle onset and depth (fio_interval, InfluxDB)"
    console.print(fitted(render(rows, compare, title, unsent), console))
    if unsent:
        console.print(
            f"incomplete: {', '.join(sorted(unsent))}: points still in their spools, not all in InfluxDB; "
            "`thermrig db drain` sends them",
            markup=False,
            soft_wrap=True,
        )
    console.print(_note(compare), markup=False)


def _note(compare: bool) -> str:
    """What onset, cause and depth mean (and the tolerances, with --compare)."""
    note = (
        f"onset: first of {SUSTAIN} seconds in a row {DROP:.0%} under the plateau, and still under it after, "
        "that is not a host stall; cause: thermal (the drive's account moved), cache (it did not, the host "
        "kept pace) or unclear (not recorded); "
        f"depth: mean of the last {TAIL_S} s vs the plateau"
    )
    if compare:
        note += (
            f"; tolerances: onset +-25 % or +-5 s, depth +-{DEPTH_PP:g} pp (depth judged on "
            f"{PUGET_RUNTIME_S} s writes, as calibrated)"
        )
    return note
