"""One calibration campaign in a process of its own, beside the others (each its own simulated rig and
virtual drive, and a whole interpreter for its pacing): the campaign procedure itself (campaign.begin
and campaign.on_rig.run_campaign), not the command line, its progress a log, one line per phase. The
exit status says how it ended: 0 every run ok, 1 failed runs (a resume retries them), 130 stopped."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from pathlib import Path

from thermrig.campaign.begin import begin
from thermrig.campaign.on_rig import CampaignInterrupted, run_campaign
from thermrig.campaign.orchestrator import CampaignHooks
from thermrig.campaign.progress import Progress
from thermrig.campaign.spec import load_campaign
from thermrig.db.target import resolve_settings
from thermrig.errors import ThermrigError


def _logger(say: Callable[[str], None]) -> Callable[[Progress], None]:
    shown: list[tuple[str, str]] = []

    def progress(pr: Progress) -> None:
        key = (pr.run.run_id if pr.run else "", pr.phase)
        if shown and shown[-1] == key:
            return
        shown.append(key)
        say(f"run {min(pr.done + 1, pr.total)}/{pr.total} {key[0]}: {pr.phase} {pr.detail}".rstrip())

    return progress


def run_file(spec: Path, folder: Path, resume: bool, say: Callable[[str], None]) -> int:
    """The campaign file run into `folder` (resumed there): 0 every run ok, 1 failed runs, 130 stopped."""
    c = load_campaign(spec)
    plan, state = begin(c, folder, resume)
    influx = resolve_settings()
    say(f"campaign {c.name}: {len(plan.runs)} runs, {len(state.completed)} done; data to {influx.describe()}")
    try:
        orch = run_campaign(plan, state, influx, CampaignHooks(None, _logger(say)), on_warning=say)
    except CampaignInterrupted:
        say("campaign interrupted: rig safe")
        return 130
    ok = len(state.completed)
    say(f"campaign {c.name}: {ok} of {len(plan.runs)} runs ok" + (f"; unsent {orch.unsent}" if orch.unsent else ""))
    return 0 if ok == len(plan.runs) else 1


def _main(spec: Path, folder: Path, resume: bool, log: Path, env: dict[str, str]) -> None:
    os.environ.update(env)  # its InfluxDB and data folder: read where used (thermrig.settings)
    with log.open("a" if resume else "w", buffering=1) as out:
        if resume:
            out.write("\n--- the campaign stopped (above); resumed ---\n")

        def say(line: str) -> None:
            out.write(line + "\n")

        try:
            code = run_file(spec, folder, resume, say)
        except ThermrigError as exc:
            say(f"error: {exc}")
            code = 1
    sys.exit(code)


def start(spec: Path, folder: Path, resume: bool, log: Path, env: dict[str, str]) -> BaseProcess:
    """The campaign started in a fresh interpreter (spawned: no thread or lock of this one in it); its
    terminate() is SIGTERM, which leaves its rig safe (thermrig.testbed)."""
    proc = multiprocessing.get_context("spawn").Process(
        target=_main, args=(spec, folder, resume, log, env), name=f"campaign {spec.stem}"
    )
    proc.start()
    return proc
