"""`thermrig lab ...`: rigs as labgrid places (docs/lab.md): write a rig's exporter file, see the lab,
and talk to a rig through the place that holds it."""

from __future__ import annotations

import getpass
import logging
import os
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from thermrig.cli.errors import user_errors
from thermrig.cli.view import info_table
from thermrig.config import resolve_port
from thermrig.errors import ThermrigError
from thermrig.lab.errors import LabError
from thermrig.lab.locks import LockRecord
from thermrig.lab.rig_place import FIO_SERVER_PORT, RigPlace, SerialPort, TestPc, exporter_yaml, tag_value
from thermrig.link.rig_link import RigLink

if TYPE_CHECKING:
    from thermrig.lab.acquired import HeldPlace  # needs labgrid: imported on use below

app = typer.Typer(
    help="A lab of rigs through labgrid: each rig a place (its serial port, its test PC's fio server and SSH, "
    "tags), locked through labgrid's coordinator. See docs/lab.md.",
    no_args_is_help=True,
)

CoordOpt = Annotated[
    str, typer.Option("--coordinator", "-x", envvar="LG_COORDINATOR", help="The labgrid coordinator, HOST:PORT.")
]


def _labgrid() -> ModuleType:
    """thermrig.lab's modules that need labgrid (the `lab` extra), imported on use. labgrid's client logs
    to the root logger: our errors say it in one line instead."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())
    try:
        import thermrig.lab.acquired
        import thermrig.lab.status
    except ImportError as exc:
        raise LabError(f"labgrid is not installed ({exc.name}): pip install 'thermrig[lab]'") from exc
    return thermrig.lab


@app.command("export")
@user_errors
def export(
    name: Annotated[str, typer.Option("--name", help="The place's name (and the exporter's resource group).")] = "",
    port: Annotated[
        str | None,
        typer.Option(
            "--port",
            help="The rig's serial device on this host (a simulated rig's pty link is resolved). Default: "
            "$THERMRIG_PORT, [rig] port in the config file, or a running `thermrig sim`.",
        ),
    ] = None,
    udev: Annotated[
        list[str],
        typer.Option(
            "--udev",
            help="A real rig: match its USB serial port by udev property instead of a path (KEY=VALUE, "
            "repeatable; e.g. ID_SERIAL_SHORT=0671FF38...). Exported as a USBSerialPort.",
        ),
    ] = [],  # noqa: B006 (typer reads the default)
    speed: Annotated[int, typer.Option(help="Serial speed.")] = 115200,
    test_pc: Annotated[
        str,
        typer.Option("--test-pc", help="Host name or address of the test PC holding the drive. Default: this host."),
    ] = "",
    test_pc_user: Annotated[str, typer.Option("--test-pc-user", help="SSH user on the test PC. Default: you.")] = "",
    fio_port: Annotated[int, typer.Option("--fio-port", help="The test PC's `fio --server` port.")] = FIO_SERVER_PORT,
    ssh_port: Annotated[int, typer.Option("--ssh-port", help="The test PC's SSH port.")] = 22,
    board: Annotated[str, typer.Option(help="Tag: the rig's board (nucleo_f411re, pico, sim...).")] = "",
    firmware: Annotated[str, typer.Option(help="Tag: the firmware version it runs.")] = "",
    drive: Annotated[str, typer.Option(help="Tag: the drive model in the test PC.")] = "",
    slot: Annotated[str, typer.Option(help="Tag: the slot, where the rig's hardware fixes it.")] = "",
    heatsink: Annotated[str, typer.Option(help="Tag: the heatsink, where fixed.")] = "",
    airflow: Annotated[str, typer.Option(help="Tag: the airflow, where fixed.")] = "",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the file here (default: stdout).")] = None,
    coordinator: Annotated[
        str,
        typer.Option(
            "--coordinator",
            "-x",
            help="Also create or update the place on this coordinator (HOST:PORT): its match and tags.",
        ),
    ] = "",
    exporter_name: Annotated[
        str,
        typer.Option("--exporter-name", help="The name the exporter runs under (-n), for the place's match."),
    ] = "",
) -> None:
    """Write the labgrid exporter file for the rig on this host.

    Run the exporter on it with `labgrid-exporter -c COORDINATOR -n NAME --hostname HOST FILE`: while a
    place is acquired, the exporter serves the rig's serial port over RFC 2217 (ser2net) and publishes the
    test PC's fio server and SSH. With --coordinator, the place is created (or updated) there too, matching
    the exporter's group and tagged with board, firmware, drive, slot, heatsink and airflow.
    """
    host = socket.gethostname()
    match = _pairs(udev, "--udev", "ID_SERIAL_SHORT=0671FF3833")
    serial = SerialPort(udev_match=match, speed=speed) if match else SerialPort(resolve_port(port).port, speed=speed)
    tags = {
        "board": board,
        "firmware": firmware,
        "drive": drive,
        "slot": slot,
        "heatsink": heatsink,
        "airflow": airflow,
    }
    place = RigPlace(
        name=name or f"rig-{host.split('.')[0]}",
        serial=serial,
        test_pc=TestPc(test_pc or host, test_pc_user or getpass.getuser(), fio_port, ssh_port),
        tags=tags,
    )
    text = exporter_yaml(place)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text)
        typer.echo(f"wrote {out} (place {place.name})", err=True)
    if coordinator:
        with _labgrid().client.LabClient(coordinator) as client:
            client.ensure_place(place.name, place.match_pattern(exporter_name or host), place.clean_tags())
        typer.echo(f"place {place.name} ready at {coordinator}", err=True)


@app.command("status")
@user_errors
def status(coordinator: CoordOpt) -> None:
    """The lab's places: who holds each and since when, their tags, what thermrig runs on them, and whether
    their firmware tag is this checkout's (`lab check` asks the rig itself)."""
    from thermrig.firmware_identity import checkout_version

    checkout = checkout_version()
    rows = _labgrid().status.lab_status(coordinator, checkout)
    table = Table(title=f"labgrid places at {coordinator} (this checkout's firmware: {checkout})")
    for column in ("place", "held by", "since", "tags", "firmware", "running"):
        table.add_column(column)
    for row in rows:
        table.add_row(row.name, row.holder or "free", row.since, row.tags, row.firmware or "-", row.running)
    Console(width=220).print(table)


def _named_stale(record: LockRecord) -> None:
    typer.echo(f"released stale lock on place {record.place} (left by pid {record.pid}, {record.purpose})", err=True)


@contextmanager
def _rig(held: HeldPlace) -> Iterator[RigLink]:
    """The place's rig, greeted; its errors name the place."""
    try:
        with RigLink(held.serial_url) as link:
            link.hello()
            yield link
    except LabError:
        raise
    except ThermrigError as exc:
        raise LabError(f"place {held.name}: {exc}") from exc


@app.command("info")
@user_errors
def info(coordinator: CoordOpt, place: Annotated[str, typer.Option("--place", "-p", help="The place.")]) -> None:
    """Acquire a place, say hello to its rig through the place's RFC 2217 port, print what it is, release."""
    lab = _labgrid()
    with lab.acquired.held_place(coordinator, place, "rig info", on_stale=_named_stale) as held, _rig(held) as link:
        Console().print(info_table(link.info, f"{held.name} ({held.serial_url})"))


@app.command("check")
@user_errors
def check(coordinator: CoordOpt, place: Annotated[str, typer.Option("--place", "-p", help="The place.")]) -> None:
    """Acquire a place and check it, one line each: its rig answers HELLO (its firmware against this
    checkout's), its test PC's fio server and SSH answer. Exit status 1 if any does not; released after."""
    from thermrig.fio.runner import FioError
    from thermrig.firmware_identity import checkout_verdict, checkout_version
    from thermrig.lab.remote_fio import check_fio_server
    from thermrig.lab.services import check_ssh

    failed = []
    with _labgrid().acquired.held_place(coordinator, place, "check", on_stale=_named_stale) as held:
        try:
            with _rig(held) as link:
                assert link.info is not None
                _, verdict = checkout_verdict(link.info.version, checkout_version())
                typer.echo(f"rig: {link.info.firmware} {link.info.version} on {held.serial_url}; current: {verdict}")
        except LabError as exc:
            failed.append(str(exc))
        if held.fio is None:
            failed.append(f"place {place}: no fio server in its resources")
        else:
            try:
                check_fio_server(held.fio, place)
                typer.echo(f"fio server: {held.fio.host},{held.fio.port} answers")
            except FioError as exc:
                failed.append(str(exc))
        if held.ssh is None:
            failed.append(f"place {place}: no SSH in its resources")
        else:
            try:
                banner = check_ssh(held.ssh, place)
                typer.echo(f"ssh: {held.ssh.user}@{held.ssh.host}:{held.ssh.port} answers ({banner})")
            except LabError as exc:
                failed.append(str(exc))
    for line in failed:
        Console(stderr=True).print(f"[bold red]error:[/] {escape(line)}", soft_wrap=True)
    if failed:
        raise typer.Exit(1)


def _pairs(pairs: list[str], option: str, example: str) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not value:
            raise typer.BadParameter(f"{pair!r}: use KEY=VALUE, e.g. {example}", param_hint=option)
        out[key] = value
    return out


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@app.command("hold")
@user_errors
def hold(
    coordinator: CoordOpt,
    place: Annotated[list[str], typer.Option("--place", "-p", help="A place to hold (repeatable).")] = [],  # noqa: B006
    tag: Annotated[
        list[str],
        typer.Option("--tag", "-t", help="Instead of --place: hold places with this tag (KEY=VALUE, repeatable)."),
    ] = [],  # noqa: B006
    count: Annotated[
        int, typer.Option("--count", "-n", min=1, help="With --tag: how many places (as many as match).")
    ] = 1,
) -> None:
    """Acquire places and hold them until Ctrl-C: prints each rig's serial URL (for --port) and its test PC.

    With --tag, the places are reserved through the coordinator's queue: while others hold them, this
    waits its turn (Ctrl-C gives up). Everything is released on exit (Ctrl-C, SIGTERM); a hold of ours
    that was killed is released at the next start.
    """
    if not place and not tag:
        raise typer.BadParameter("name a --place or give a --tag", param_hint="--place")
    tags = {k: tag_value(v) for k, v in _pairs(tag, "--tag", "board=sim").items()}
    lab = _labgrid()
    signal.signal(signal.SIGTERM, _interrupted)  # `systemctl stop`, `kill`: released as on Ctrl-C
    try:
        held = _hold_until_interrupted(lab, coordinator, place, tags, count)
    except KeyboardInterrupt:  # before every place was held: waiting in the queue, or acquiring
        typer.echo("interrupted: nothing held, reservations cancelled", err=True)
        raise typer.Exit(130) from None
    typer.echo(f"released {', '.join(held)}", err=True)


def _hold_until_interrupted(
    lab: ModuleType, coordinator: str, place: list[str], tags: dict[str, str], count: int
) -> list[str]:
    with lab.acquired.held_places(
        coordinator, "hold", places=place, tags=tags, count=count, on_stale=_named_stale,
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


@app.command("influx-users")
@user_errors
def influx_users(
    url: Annotated[str, typer.Option("--url", help="The central InfluxDB 1.8 (auth-enabled = true).")],
    database: Annotated[str, typer.Option("--database", help="The campaigns' database.")] = "thermrig",
    admin: Annotated[str, typer.Option("--admin", help="The admin user (created if the server has none).")] = "admin",
    agent: Annotated[str, typer.Option("--agent", help="The rigs' agents' user: write only.")] = "agent",
    grafana: Annotated[str, typer.Option("--grafana", help="Grafana's user: read only.")] = "grafana",
) -> None:
    """Make the lab's InfluxDB 1.8 users: an admin, a write-only user for the agents, a read-only one for
    Grafana.

    Passwords come from THERMRIG_LAB_ADMIN_PASSWORD, THERMRIG_LAB_AGENT_PASSWORD and
    THERMRIG_LAB_GRAFANA_PASSWORD, or are asked. Run it again to change a password. Agents then use the
    token agent:PASSWORD (the influx table of config.toml); docs/lab.md has 2.x and 3.x tokens."""
    from thermrig.lab.influx_users import Credentials, provision

    def secret(role: str) -> str:
        return os.environ.get(f"THERMRIG_LAB_{role.upper()}_PASSWORD") or typer.prompt(
            f"{role} password", hide_input=True
        )

    creds = {role: Credentials(user, secret(role)) for role, user in (("admin", admin), ("agent", agent),
                                                                       ("grafana", grafana))}  # fmt: skip
    provision(url, database, creds["admin"], creds["agent"], creds["grafana"])
    typer.echo(f"{url} database {database}: {agent} writes, {grafana} reads, {admin} administers")


def _hms(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s"


@app.command("plan")
@user_errors
def plan(
    campaign_file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The campaign file.")],
    coordinator: Annotated[
        str, typer.Option("--coordinator", "-x", envvar="LG_COORDINATOR", help="Plan on this lab's places.")
    ] = "",
    tag: Annotated[list[str], typer.Option("--tag", "-t", help="With -x: only places with this tag.")] = [],  # noqa: B006
    places: Annotated[int, typer.Option("--places", "-n", min=1, help="Without -x: this many places.")] = 1,
    seed: Annotated[int | None, typer.Option(help="Order the runs with this seed (default: the file's).")] = None,
) -> None:
    """Which place would run which run, and the campaign's planned time on one place and on the lab.

    A run goes to a place whose fixed hardware tags (slot, heatsink, airflow) match its factors without
    an operator prompt, else to a place where that hardware is not fixed (the operator sets it up), never
    to a place whose fixed hardware differs. Without --coordinator, the places are alike and fix nothing.
    """
    from thermrig.campaign.plan import make_plan
    from thermrig.campaign.spec import load_campaign
    from thermrig.lab.assign import PlaceHardware, RunNeed, assign

    p = make_plan(load_campaign(campaign_file), seed)
    runs = [RunNeed(r.run_id, {k: str(v) for k, v in r.physical.items()}, p.estimate_s(r)) for r in p.runs]
    if coordinator:
        wanted = {k: tag_value(v) for k, v in _pairs(tag, "--tag", "board=sim").items()}
        with _labgrid().client.LabClient(coordinator) as client:
            names = client.matching(wanted)
            lab = [PlaceHardware(n, client.place(n).tags) for n in names]
        if not lab:
            raise LabError(f"no place at {coordinator} matches the tags")
    else:
        lab = [PlaceHardware(f"place-{i + 1}", {}) for i in range(places)]
    split = assign(runs, lab)
    one = sum(r.estimate_s for r in runs)
    table = Table(title=f"{p.campaign.name}: {len(runs)} runs on {len(lab)} places")
    for column in ("place", "fixed", "runs", "operator prompts", "planned"):
        table.add_column(column)
    for hw, lane in zip(lab, split.lanes, strict=True):
        fixed = " ".join(f"{k}={v}" for k, v in sorted(hw.tags.items()) if k in ("slot", "heatsink", "airflow"))
        table.add_row(lane.place, fixed or "-", str(len(lane.runs)), str(len(lane.prompts)), _hms(lane.busy_s))
    Console(width=200).print(table)
    typer.echo(
        f"planned {_hms(one)} on one place, {_hms(split.makespan_s)} on {len(lab)} places "
        f"({one / split.makespan_s:.2f}x; equilibrium and cool-down are estimates)"
    )
