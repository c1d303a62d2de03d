"""`thermrig lab ...`: rigs as labgrid places (docs/lab.md): write a rig's exporter file and see the lab
here; hold a place and talk to its rig (lab_place_cmds), plan a campaign on the lab (lab_plan_cmd), the
lab InfluxDB's users (lab_influx_cmd)."""

from __future__ import annotations

import getpass
import socket
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from thermrig.cli import lab_demo_cmd, lab_influx_cmd, lab_place_cmds, lab_plan_cmd
from thermrig.cli.lab_common import CoordOpt, labgrid_modules, pairs
from thermrig.cli.user_errors import user_errors
from thermrig.config import resolve_port
from thermrig.lab.rig_place import FIO_SERVER_PORT, RigPlace, SerialPort, TestPc, exporter_yaml

app = typer.Typer(
    rich_markup_mode=None,
    help="A lab of rigs through labgrid: each rig a place (its serial port, its test PC's fio server and SSH, "
    "tags), locked through labgrid's coordinator. See docs/lab.md.",
    no_args_is_help=True,
)


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
    match = pairs(udev, "--udev", "ID_SERIAL_SHORT=0671FF3833")
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
        with labgrid_modules().client.LabClient(coordinator) as client:
            client.ensure_place(place.name, place.match_pattern(exporter_name or host), place.clean_tags())
        typer.echo(f"place {place.name} ready at {coordinator}", err=True)


@app.command("status")
@user_errors
def status(coordinator: CoordOpt) -> None:
    """The lab's places: who holds each and since when, their tags, firmware and what runs on them.

    The firmware column compares each place's firmware tag with this checkout's: the tag is what the
    rig said in the last HELLO thermrig saw through the place (a lab campaign's start, `lab check`,
    `flash --lab`). The running column says what holds the place and, for a lab campaign, how far it
    is (run i of n on that place, the phase, the campaign's runs done)."""
    from thermrig.firmware_identity import checkout_version

    checkout = checkout_version()
    rows = labgrid_modules().status.lab_status(coordinator, checkout)
    table = Table(title=f"labgrid places at {coordinator} (this checkout's firmware: {checkout})")
    for column in ("place", "held by", "since", "tags", "firmware", "running"):
        table.add_column(column)
    for row in rows:
        table.add_row(row.name, row.holder or "free", row.since, row.tags, row.firmware or "-", row.running)
    Console(width=max(220, Console().width)).print(table)  # a row a line: COLUMNS widens it


app.command("info")(lab_place_cmds.info)
app.command("check")(lab_place_cmds.check)
app.command("hold")(lab_place_cmds.hold)
app.command("plan")(lab_plan_cmd.plan)
app.command("influx-users")(lab_influx_cmd.influx_users)
app.command("demo")(lab_demo_cmd.demo)
