"""`thermrig rig selftest`: the conformance suite against a rig, with a line per check: PASS, FAIL or n/a."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from thermrig.cli.sim_options import SimFirmwareOpt, SimImageOpt
from thermrig.cli.user_errors import user_errors
from thermrig.conformance.check_runner import ALL_CHECKS, run_all, select
from thermrig.conformance.result import Outcome, counts
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.pacing import Pacing
from thermrig.testbed import LocalRig, SimulatedRigSpec, open_testbed

MARK = {Outcome.PASSED: "[green]PASS[/]", Outcome.FAILED: "[bold red]FAIL[/]", Outcome.NOT_APPLICABLE: "[yellow]n/a[/]"}


@user_errors
def selftest(
    port: Annotated[
        str | None, typer.Option("--port", "-p", help="Rig device or pyserial URL (default as for other commands).")
    ] = None,
    sim: Annotated[
        bool, typer.Option("--sim", help="Test a fresh simulated rig in virtual time, fault matrix included.")
    ] = False,
    destructive: Annotated[
        bool, typer.Option("--destructive", help="Allow checks that heat the rig (real hardware; a sim always may).")
    ] = False,
    firmware: SimFirmwareOpt = "rigsim",
    image: SimImageOpt = None,
    only: Annotated[list[str] | None, typer.Option(help="Run only checks matching this glob (repeatable).")] = None,
    list_checks: Annotated[bool, typer.Option("--list", help="List the checks and exit.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the results to this JSON file.")] = None,
) -> None:
    """Check that a rig behaves as the protocol and safety documents say: PASS, FAIL or n/a (and why) per check.

    On real hardware the checks that heat the chassis run only with --destructive; the fault matrix
    (every fault in docs/safety.md, injected) needs the simulated rig: --sim. The rig is left in its
    safe state (heater off, fans full). Exit status 1 if any check failed.
    """
    console = Console()
    if list_checks:
        for c in ALL_CHECKS:
            tags = ", ".join(t for t, on in (("heats", c.heats), ("sim only", c.needs_sim)) if on)
            console.print(f"{c.name:<26} {c.description}" + (f"  [dim]({tags})[/]" if tags else ""))
        return
    try:
        checks = select(only)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    with contextlib.ExitStack() as stack:
        where = SimulatedRigSpec(Pacing.stepped(), seed=7, firmware=firmware, image=image) if sim else LocalRig(port)
        # no heartbeat: the checks time it
        bed = stack.enter_context(open_testbed(where, keepalive=False, stored_gains=True))
        info = bed.info
        console.print(f"selftest of {info.firmware} {info.version} on {info.board} at {bed.port}")
        target = RigUnderTest(bed, bed.sim, destructive=destructive)
        table = Table(title="conformance")
        for col in ("check", "result", "figure / detail", "wall"):
            table.add_column(col)
        results = []
        with console.status("") as status:
            for result, wall in run_all(target, checks, lambda c: status.update(f"{c.name}: {c.description}")):
                results.append(result)
                shown = result.detail if result.outcome is Outcome.NOT_APPLICABLE else result.text
                table.add_row(result.name, MARK[result.outcome], shown, f"{wall:.1f} s")
                console.print(f"{MARK[result.outcome]} {result.name}: {shown}")
    console.print(table)
    console.print(counts(results))
    if json_out is not None:
        json_out.write_text(json.dumps([r.__dict__ for r in results], indent=2))
    if any(r.outcome is Outcome.FAILED for r in results):
        raise typer.Exit(1)
