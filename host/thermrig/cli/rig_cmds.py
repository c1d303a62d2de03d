"""`thermrig rig ...`: talk to a rig (real or simulated) over its serial port."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live

from thermrig.cli.bringup_cmd import bringup_cmd
from thermrig.cli.identify_cmd import identify
from thermrig.cli.record_cmd import record
from thermrig.cli.rig_options import PortOpt
from thermrig.cli.selftest_cmd import selftest
from thermrig.cli.tune_cmd import tune
from thermrig.cli.user_errors import user_errors
from thermrig.cli.view import info_table, telemetry_view
from thermrig.firmware_identity import checkout_verdict, checkout_version
from thermrig.link.rig_link import RigLink
from thermrig.protocol import limits
from thermrig.testbed import LocalRig, open_testbed

app = typer.Typer(rich_markup_mode=None, help="Talk to the rig: identity, settings, live view.", no_args_is_help=True)


@contextmanager
def _connect(port: str | None) -> Iterator[RigLink]:
    """The rig, greeted, for a short command that sets it as asked: left so on a normal exit (its
    heartbeat stops with the command: heating ends at the rig's host timeout), safe after an error."""
    with open_testbed(LocalRig(port), keepalive=False, leave_as_is=True, stored_gains=True) as bed:
        yield bed.link


@app.command()
@user_errors
def info(port: PortOpt = None) -> None:
    """Handshake with the rig and show its firmware, protocol, board and channel map."""
    with _connect(port) as link:
        assert link.info is not None
        Console().print(info_table(link.info, link.port))
        _, verdict = checkout_verdict(link.info.version, checkout_version())
        Console().print(f"this checkout: {verdict}", soft_wrap=True)


@app.command()
@user_errors
def heap(port: PortOpt = None) -> None:
    """Show the MicroPython firmware's heap, its garbage collections and its longest tick."""
    with _connect(port) as link:
        r = link.heap_report()
    console = Console()
    console.print(f"heap: {r.free:,} B free of {r.heap:,} B now, {r.free_after_gc:,} B after the last collection")
    gc_ms = f"the last {r.gc_last_us / 1000:.1f} ms, the longest {r.gc_max_us / 1000:.1f} ms"
    console.print(f"garbage collections: {r.collections}, {gc_ms}")
    console.print(f"longest tick: {r.tick_max_us / 1000:.1f} ms of {limits.TICK_S * 1000:.0f} ms")


@app.command("set")
@user_errors
def set_(
    port: PortOpt = None,
    air: Annotated[
        float | None,
        typer.Option(help=f"Chassis-air target, °C ({limits.AIR_TARGET_MIN_C:g}-{limits.AIR_TARGET_MAX_C:g})."),
    ] = None,
    heat: Annotated[bool | None, typer.Option("--heat/--no-heat", help="Enable closed-loop heating.")] = None,
    heater_limit: Annotated[float | None, typer.Option(help="Heater duty limit, % (0-100).")] = None,
    fan0: Annotated[float | None, typer.Option(help="Chassis fan duty, % (0-100).")] = None,
    fan1: Annotated[float | None, typer.Option(help="Slot fan duty, % (0-100).")] = None,
    rpm0: Annotated[int | None, typer.Option(help="Chassis fan closed-loop speed, RPM.")] = None,
    rpm1: Annotated[int | None, typer.Option(help="Slot fan closed-loop speed, RPM.")] = None,
    rate: Annotated[
        int | None,
        typer.Option(help=f"Telemetry period, ms ({limits.TEL_MIN_MS}-{limits.TEL_MAX_MS}; 0 stops)."),
    ] = None,
) -> None:
    """Change rig settings. The rig checks every value against its limits and refuses what is out of range.

    While heating, the firmware needs to hear from a host within the host timeout it reports in HELLO
    (3 s on this repository's firmwares) or it goes to its safe state:
    keep `thermrig rig watch` (or a recording) running after --heat.
    """
    values: dict[str, int] = {}
    for key, value, scale in (
        ("air", air, 100),
        ("hlim", heater_limit, limits.FULL_SCALE_PM / 100),
        ("fan0", fan0, limits.FULL_SCALE_PM / 100),
        ("fan1", fan1, limits.FULL_SCALE_PM / 100),
        ("rpm0", rpm0, 1),
        ("rpm1", rpm1, 1),
        ("rate", rate, 1),
    ):
        if value is not None:
            values[key] = round(value * scale)
    if heat is not None:
        values["heat"] = int(heat)
    if not values:
        raise typer.BadParameter("nothing to set: give at least one option (see --help)")
    with _connect(port) as link:
        link.set(**values)
        Console().print(f"[green]set[/] {' '.join(f'{k}={v}' for k, v in values.items())}")
        if heat:
            Console().print(
                "[yellow]heating is on: the rig goes safe after "
                f"{link.info.host_timeout_s if link.info else limits.HOST_TIMEOUT_S:g} s without a host; "
                "run `thermrig rig watch`"
            )


@app.command()
@user_errors
def clear(port: PortOpt = None) -> None:
    """Clear latched faults. Heating stays disabled until enabled again; a fault still present latches again."""
    with _connect(port) as link:
        link.command("CLEAR")
        tel = link.next_telemetry()
        Console().print(f"faults now: {tel.faults.name or 'none'}" if tel.faults else "[green]faults cleared")


@app.command()
@user_errors
def safe(port: PortOpt = None) -> None:
    """Put the rig in its safe state now: heater off, fans full."""
    with open_testbed(LocalRig(port), keepalive=False, leave_as_is=True, stored_gains=True) as bed:
        bed.safe(checked=True)
        Console().print("[green]rig safe: heater off, fans full")


@app.command()
@user_errors
def watch(
    port: PortOpt = None,
    seconds: Annotated[float | None, typer.Option(help="Stop after this many seconds (default: until Ctrl-C).")] = None,
) -> None:
    """Live table of every channel, actuator and fault. Keeps the link alive (the heating heartbeat)."""
    with _connect(port) as link:
        link.start_keepalive()
        tel = link.next_telemetry(timeout=3.0)
        deadline = time.monotonic() + seconds if seconds else None
        try:
            with Live(telemetry_view(tel, link), refresh_per_second=4, transient=False) as live:
                while deadline is None or time.monotonic() < deadline:
                    time.sleep(0.25)
                    if link.latest is not None:
                        live.update(telemetry_view(link.latest, link))
        except KeyboardInterrupt:
            pass


app.command("selftest")(selftest)
app.command("record")(record)
app.command("identify")(identify)
app.command("bringup")(bringup_cmd)
app.command("tune")(tune)
