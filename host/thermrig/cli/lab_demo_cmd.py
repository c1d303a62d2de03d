"""`thermrig lab demo`: a lab of rigs on this machine, to see `thermrig run --lab` and `lab status` before a
second rig is bought: a labgrid coordinator, simulated places (each rig exported through ser2net) and
their test PCs (a fio server and sshd each), all on loopback (thermrig.lab_world); a short campaign runs
over them while the lab's status is shown live. Everything stops on exit and on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from thermrig.children import with_default_sigint
from thermrig.cli.lab_common import labgrid_modules
from thermrig.cli.user_errors import user_errors

NAME = "lab-demo"
MAX_PLACES = 6


def _status(address: str) -> Table:
    table = Table(title=f"thermrig lab status -x {address}")
    for column in ("place", "held by", "tags", "running"):
        table.add_column(column)
    for row in labgrid_modules().status.lab_status(address):
        table.add_row(row.name, row.holder or "free", row.tags, row.running)
    return table


def _try_these(address: str, first: str, reader: str) -> str:
    """reader: how `thermrig throttle` reads the campaign's InfluxDB (the lab's analysts' credentials)."""
    return "\n".join(
        [
            "while it runs, in another shell (. .venv/bin/activate):",
            f"  thermrig lab status -x {address}             # places, who holds them, how far each is",
            f"  thermrig lab plan -x {address} --tag board=sim FILE   # who would run what, how long",
            f"  labgrid-client -x {address} places                   # labgrid's own client",
            f"  labgrid-client -x {address} -p {first} show              # a place's resources",
            f"  {reader}thermrig throttle {NAME}   # the runs done so far, from InfluxDB",
        ]
    )


@user_errors
def demo(
    places: Annotated[int, typer.Option(help=f"Simulated places (rigs with their test PCs), 1-{MAX_PLACES}.")] = 3,
    runs: Annotated[int, typer.Option(help="Runs of the campaign, shared out over the places.")] = 6,
    runtime: Annotated[int, typer.Option(help="Seconds of sequential writes per run (fio at real time).")] = 5,
    folder: Annotated[
        Path | None,
        typer.Option(
            help="Keep the lab's files here (exporter files, logs, the campaign's folder); default: a "
            "temporary folder, removed at the end."
        ),
    ] = None,
    insecure: Annotated[
        bool, typer.Option("--insecure", help="fio's servers and the rigs' ser2net reached straight, not through SSH.")
    ] = False,
    influx_server: Annotated[
        int,
        typer.Option(
            min=1,
            max=2,
            help="The lab's InfluxDB: 1 (influxd 1.x, users and passwords) or 2 (InfluxDB 2.x, a write-only and "
            "a read-only token).",
        ),
    ] = 1,
) -> None:
    """A lab on this machine: a labgrid coordinator, simulated places and their test PCs on loopback; a
    short campaign (`thermrig run --lab`) over them while `lab status` is shown live. Ctrl-C, or the
    campaign's end, stops every process it started. Results go to the lab's own InfluxDB (authentication
    on, in the lab's folder; 1.x or, with --influx-server 2, 2.x); with --insecure, to thermrig's InfluxDB
    like any campaign's."""
    if not 1 <= places <= MAX_PLACES:
        raise typer.BadParameter(f"--places must be 1 to {MAX_PLACES}")
    if runs < 1 or runtime < 1:
        raise typer.BadParameter("--runs and --runtime must be at least 1")
    labgrid_modules()  # says how to install the lab extra when labgrid is missing
    from thermrig.lab_world.world import CAMPAIGN_RIG, TAGS, campaign, simulated_lab

    console = Console()
    names = [f"rig-{chr(ord('a') + i)}" for i in range(places)]
    with ExitStack() as stack:
        root = folder or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="thermrig-lab-demo-")))
        root.mkdir(parents=True, exist_ok=True)
        console.print(f"starting a lab of {places} simulated places in {root} ...")
        lab = stack.enter_context(simulated_lab(root, names, CAMPAIGN_RIG, not insecure, influx_server))
        for name in names:
            lab.add_place(name, TAGS)
            console.print(f"  place {name}: rig on {lab.rigs[name].port}, test PC fio :{lab.ports[name][0]}, "
                          f"ssh :{lab.ports[name][1]}")  # fmt: skip
        path = campaign(root, NAME, lab.address, runs, runtime_s=runtime, ssh_key=lab.ssh_key, insecure=insecure)
        console.print(f"coordinator at {lab.address}; campaign {path}")
        env = dict(os.environ)
        reader = ""
        if lab.influx is not None:  # sealed: the lab's InfluxDB, the agents' user writes, the analysts' reads
            env.update(lab.influx.env())
            agent, analyst = lab.influx.agent.user, lab.influx.analyst.user
            console.print(f"InfluxDB at {lab.influx.url}, authentication on: the campaign writes as {agent} "
                          f"(write only), reads back as {analyst} (read only)")  # fmt: skip
            reader = lab.influx.reader_env()
        console.print(_try_these(lab.address, names[0], reader), highlight=False, soft_wrap=True)  # copyable lines
        cmd = [sys.executable, "-m", "thermrig.cli", "run", str(path), "--no-prompt", "--out", str(root / NAME)]
        returncode = _follow(console, lab.address, cmd, env)
        console.print()  # the live view's last line is the campaign's own
        console.print(f"campaign {NAME} ended ({'ok' if returncode == 0 else f'exit {returncode}'}); "
                      "stopping the lab")  # fmt: skip
        if returncode:
            raise typer.Exit(returncode)


def _follow(console: Console, address: str, cmd: list[str], env: dict[str, str]) -> int:
    """The campaign run as its own process, the lab's status and the campaign's last lines shown live
    until it ends; Ctrl-C stops it as a terminal's would. Its exit status."""
    proc = subprocess.Popen(
        with_default_sigint(cmd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    tail: deque[str] = deque(maxlen=8)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        with Live(console=console, refresh_per_second=2, transient=False) as live:
            while proc.poll() is None:
                live.update(Group(_status(address), Text("\n".join(tail))))
                reader.join(timeout=1.0)
            reader.join(timeout=5)
            live.update(Group(_status(address), Text("\n".join(tail))))
    except KeyboardInterrupt:
        console.print("Ctrl-C: stopping the campaign, then the lab ...")
        proc.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C would: its runs' rigs go safe
        proc.wait(timeout=60)
        raise typer.Exit(130) from None
    return proc.returncode
