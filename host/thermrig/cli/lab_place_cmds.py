"""`thermrig lab info | check | hold`: a place held for a command, its rig greeted through the place's
RFC 2217 port, its test PC checked, or held until Ctrl-C."""

from __future__ import annotations

import signal
from types import ModuleType
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from thermrig.cli.lab_common import CoordOpt, labgrid_modules, named_stale, pairs
from thermrig.cli.user_errors import user_errors
from thermrig.cli.view import info_table
from thermrig.lab.rig_place import tag_value
from thermrig.testbed.signals import sigterm_interrupts


@user_errors
def info(coordinator: CoordOpt, place: Annotated[str, typer.Option("--place", help="The place.")]) -> None:
    """Acquire a place, say hello to its rig through the place's RFC 2217 port, print what it is, release."""
    lab = labgrid_modules()
    from thermrig.lab.place_check import place_rig

    with lab.acquired.held_place(coordinator, place, "rig info", on_stale=named_stale) as held, place_rig(held) as link:
        Console().print(info_table(link.info, f"{held.name} ({held.serial_url})"))


@user_errors
def check(
    coordinator: CoordOpt,
    place: Annotated[str, typer.Option("--place", help="The place.")],
    insecure: Annotated[
        bool, typer.Option("--insecure", help="The fio server straight over the network, not through SSH.")
    ] = False,
) -> None:
    """Acquire a place and check its rig, its test PC's fio server and SSH, one line each; release it.

    The rig must answer HELLO (its firmware is compared with this checkout's), the fio server (through
    an SSH forward with $THERMRIG_LAB_SSH_KEY or ssh's own key) and SSH must answer. Exit status 1 naming
    each that does not."""
    lab = labgrid_modules()
    from thermrig.lab.place_check import check_place

    with (
        lab.client.LabClient(coordinator) as client,
        lab.acquired.holding(client, "check", places=[place], on_stale=named_stale) as (held,),
    ):
        failed = check_place(client, held, typer.echo, insecure=insecure)
    for line in failed:
        Console(stderr=True).print(f"[bold red]error:[/] {escape(line)}", soft_wrap=True)
    if failed:
        raise typer.Exit(1)


@user_errors
def hold(
    coordinator: CoordOpt,
    place: Annotated[list[str], typer.Option("--place", help="A place to hold (repeatable).")] = [],  # noqa: B006
    tag: Annotated[
        list[str],
        typer.Option("--tag", "-t", help="Instead of --place: hold places with this tag (KEY=VALUE, repeatable)."),
    ] = [],  # noqa: B006
    count: Annotated[int, typer.Option("--count", min=1, help="With --tag: how many places (as many as match).")] = 1,
) -> None:
    """Acquire places and hold them until Ctrl-C: prints each rig's serial URL (for --port) and its test PC.

    With --tag, the places are reserved through the coordinator's queue: while others hold them, this
    waits its turn (Ctrl-C gives up). Everything is released on exit (Ctrl-C, SIGTERM); a hold of ours
    that was killed is released at the next start.
    """
    if not place and not tag:
        raise typer.BadParameter("name a --place or give a --tag", param_hint="--place")
    tags = {k: tag_value(v) for k, v in pairs(tag, "--tag", "board=sim").items()}
    lab = labgrid_modules()
    try:
        with sigterm_interrupts():  # `systemctl stop`, `kill`: released as on Ctrl-C
            held = _hold_until_interrupted(lab, coordinator, place, tags, count)
    except KeyboardInterrupt:  # before every place was held: waiting in the queue, or acquiring
        typer.echo("interrupted: nothing held, reservations cancelled", err=True)
        raise typer.Exit(130) from None
    typer.echo(f"released {', '.join(held)}", err=True)


def _hold_until_interrupted(
    lab: ModuleType, coordinator: str, place: list[str], tags: dict[str, str], count: int
) -> list[str]:
    with lab.client.LabClient(coordinator) as client, lab.acquired.holding(
        client, "hold", places=place, tags=tags, count=count, on_stale=named_stale,
        on_wait=lambda message: typer.echo(message, err=True),
    ) as held:  # fmt: skip
        for one in held:
            typer.echo(f"holding place {one.name}: rig at {one.serial_url}", err=True)
            if one.fio is not None:
                typer.echo(f"  test PC fio server {one.fio.host},{one.fio.port}", err=True)
            if one.ssh is not None:
                typer.echo(f"  test PC ssh {one.ssh.user}@{one.ssh.host} -p {one.ssh.port}", err=True)
        try:
            while True:
                signal.pause()
        except KeyboardInterrupt:
            pass
    return [one.name for one in held]
