"""`thermrig sim`: run the simulated rig (plant model + a firmware: rigsim, Zephyr in QEMU or on native_sim,
MicroPython) and serve its port; `thermrig sim fault ...`: inject faults into the running simulation."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from thermrig.cli.step_cmd import step
from thermrig.cli.user_errors import user_errors
from thermrig.dut.faults import FaultKind
from thermrig.dut.pacing import Pacing
from thermrig.dut.simulation import FIRMWARES
from thermrig.fio.workloads import WorkloadError, parse_size
from thermrig.hardware.drive_profiles import drive_names
from thermrig.hardware.profiles import HEATSINKS, SLOTS
from thermrig.priority import describe
from thermrig.settings import ConfigError, running_sim
from thermrig.sim.serving import Serving, serve
from thermrig.sim.simulated_rig import SimConfig
from thermrig.testbed.signals import signals_stop

app = typer.Typer(rich_markup_mode=None, help="The simulated rig: plant model plus the real firmware core.")
app.command("step")(step)


@app.callback(invoke_without_command=True)
@user_errors
def sim(
    ctx: typer.Context,
    slot: Annotated[str, typer.Option(help=f"Slot position: {', '.join(SLOTS)}.")] = "top",
    heatsink: Annotated[str, typer.Option(help=f"Drive cooling: {', '.join(HEATSINKS)}.")] = "none",
    speed: Annotated[
        float, typer.Option(help="Simulation speed: 1 = real time, N = N x real time, 0 = as fast as possible.")
    ] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed for sensor noise; same seed, same run.")] = 0,
    ppm: Annotated[float, typer.Option(help="Simulated MCU crystal error, ppm.")] = 0.0,
    offset_us: Annotated[int, typer.Option(help="MCU uptime at start, µs.")] = 0,
    room: Annotated[float | None, typer.Option(help="Room temperature, °C (default: hardware profile).")] = None,
    link: Annotated[Path | None, typer.Option(help="Serve the port at this path (a symlink to the pty).")] = None,
    firmware: Annotated[
        str,
        typer.Option(
            help=f"Firmware run against the plant: {', '.join(FIRMWARES)} (zephyr: in QEMU; zephyr-board: the "
            "Nucleo's HAL on native_sim; micropython-pico: the Pico's HAL on the unix port; micropython-rp2040: "
            "stock MicroPython on an emulated RP2040, make firmware-pico)."
        ),
    ] = "rigsim",
    chassis: Annotated[
        str | None,
        typer.Option(help="A named chassis (`thermrig rig identify` writes one); default: hardware/profiles."),
    ] = None,
    drive: Annotated[
        str | None,
        typer.Option(help=f"Serve a virtual drive in the slot over NBD: {', '.join(drive_names())}."),
    ] = None,
    scale: Annotated[
        float, typer.Option(help="The virtual drive's wire rate per modelled rate (bandwidth and IOPS), in (0, 1].")
    ] = SimConfig.drive_scale,
    keep_data: Annotated[
        str,
        typer.Option(
            help="The virtual drive keeps what is written, up to this size (a sparse file in its folder; "
            "past it, writes needing new space fail with ENOSPC). 0: drop written data, reads return zeros."
        ),
    ] = "8g",
) -> None:
    """Start the simulated rig and print the serial port it serves, until Ctrl-C.

    Other commands find the port by themselves while it runs (`thermrig rig watch`), and
    `thermrig sim fault` injects faults into it. With --drive, the virtual drive heats the slot as it
    serves: its NBD URI is printed too, for your own fio jobs (ioengine=nbd, uri=...), nbdcopy or qemu-io.
    """
    if ctx.invoked_subcommand is not None:
        return
    if speed < 0:
        raise typer.BadParameter("speed must be 0 (fastest), 1 (real time) or more")
    cfg = SimConfig(
        slot=slot,
        heatsink=heatsink,
        seed=seed,
        pacing=Pacing.of_speed(speed),
        ppm=ppm,
        offset_us=offset_us,
        room_c=room,
        link=link,
        firmware=firmware,
        chassis=chassis,
        drive=drive,
        drive_scale=scale,
        drive_keep_data=_size(keep_data),
    )
    console = Console()
    stop = threading.Event()
    with signals_stop(stop):  # Ctrl-C and SIGTERM end the simulation the same orderly way, once it serves
        serve(cfg, stop, functools.partial(_ready, console, cfg, speed, keep_data), lambda note: _say(console, note))


def _say(console: Console, note: str) -> None:
    console.print(f"[red]{escape(note)}[/]")


def _ready(console: Console, cfg: SimConfig, speed: float, keep_data: str, s: Serving) -> None:
    """The port served (and the drive's NBD URI), for a person and on lines of their own for a script."""
    chassis = f", chassis {cfg.chassis}" if cfg.chassis else ""
    console.print(
        f"simulated rig on [bold]{s.port}[/] ({cfg.firmware}, slot {cfg.slot}, heatsink {cfg.heatsink}, "
        f"speed {speed:g}x{chassis})"
    )
    if s.drive_uri is not None:
        kept = f"keeps up to {keep_data} written" if cfg.drive_keep_data else "drops written data"
        console.print(
            f"virtual drive {cfg.drive} (scale {cfg.drive_scale:g}, {kept}) served over NBD at [bold]{s.drive_uri}[/]"
        )
        console.print(f"try: fio --name=t --ioengine=nbd --uri='{s.drive_uri}' --rw=randread --bs=4k --size=1g")
    console.print(describe())
    console.print("try: thermrig rig watch    thermrig sim fault tc-open    (Ctrl-C stops the simulation)")
    print(s.port, flush=True)
    if s.drive_uri is not None:
        print(s.drive_uri, flush=True)


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except WorkloadError as exc:
        raise typer.BadParameter(f"--keep-data: {exc}") from exc


@app.command()
@user_errors
def fault(
    kind: Annotated[
        str | None, typer.Argument(help=f"One of: {', '.join(k.value for k in FaultKind)}.", show_default=False)
    ] = None,
    channel: Annotated[int, typer.Option(help="Thermocouple 0-3, fan 0-1, garbage 0 = into the rig, 1 = to host.")] = 0,
    value: Annotated[
        float | None,
        typer.Option(
            help="tc-stuck: reading, °C; tc-noisy: noise, °C; silence/unplug: s; room-step: °C; "
            "clock-jump: ms; clock-drift: ppm; tick-stall: ms."
        ),
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove every persistent fault.")] = False,
) -> None:
    """Inject a fault into the running simulated rig (or --clear them). Shows the faults still active."""
    if kind is None and not clear:
        raise typer.BadParameter("give a fault kind or --clear (see --help for the kinds)")
    message = {"clear": True} if clear else {"fault": kind, "channel": channel, "value": value}
    running = running_sim()
    if running is None:
        raise ConfigError("no simulated rig is running: start one with `thermrig sim`")
    reply = running.request(message)
    if not reply.get("ok"):
        raise ConfigError(reply.get("error", "the simulation refused the request"))
    active = reply.get("active") or []
    Console().print(f"[green]done[/]; active faults: {', '.join(active) if active else 'none'}")
