"""`thermrig sim`: run the simulated rig (plant model + firmware core) and serve its port."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from thermrig.cli.errors import user_errors
from thermrig.config import sim_state_file
from thermrig.plant.profiles import HEATSINKS, SLOTS, ProfileError
from thermrig.plant.simulated_rig import SimConfig, SimulatedRig


@user_errors
def sim(
    slot: Annotated[str, typer.Option(help=f"Slot position: {', '.join(SLOTS)}.")] = "top",
    heatsink: Annotated[str, typer.Option(help=f"Drive cooling: {', '.join(HEATSINKS)}.")] = "none",
    speed: Annotated[
        float, typer.Option(help="Simulation speed: 1 = real time, N = N x real time, 0 = as fast as possible.")
    ] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed for sensor noise; same seed, same run.")] = 0,
    ppm: Annotated[float, typer.Option(help="Simulated MCU crystal error, ppm.")] = 0.0,
    offset_us: Annotated[int, typer.Option(help="MCU uptime at start, µs.")] = 0,
    room: Annotated[float | None, typer.Option(help="Room temperature, °C (default: hardware profile).")] = None,
    link: Annotated[Path | None, typer.Option(help="Also expose the port as this symlink.")] = None,
) -> None:
    """Start the simulated rig and print the serial port it serves, until Ctrl-C.

    Other commands find the port by themselves while it runs (`thermrig rig watch`).
    """
    if slot not in SLOTS:
        raise ProfileError(f"unknown slot {slot!r}; choose one of {', '.join(SLOTS)}")
    if heatsink not in HEATSINKS:
        raise ProfileError(f"unknown heatsink {heatsink!r}; choose one of {', '.join(HEATSINKS)}")
    if speed < 0:
        raise typer.BadParameter("speed must be 0 (fastest), 1 (real time) or more")
    cfg = SimConfig(
        slot=slot,
        heatsink=heatsink,
        seed=seed,
        speed=None if speed == 1.0 else speed,
        ppm=ppm,
        offset_us=offset_us,
        room_c=room,
        link=link,
    )
    console = Console()
    state = sim_state_file()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with SimulatedRig(cfg) as rig:
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"port": rig.port, "pid": os.getpid()}))
        console.print(f"simulated rig on [bold]{rig.port}[/] (slot {slot}, heatsink {heatsink}, speed {speed:g}x)")
        console.print(f"try: thermrig rig watch --port {rig.port}    (Ctrl-C stops the simulation)")
        print(rig.port, flush=True)
        try:
            while not stop.wait(0.5):
                rig.server.check()
                if rig.proc.poll() is not None:
                    raise SystemExit(f"rigsim exited with status {rig.proc.returncode}")
        except KeyboardInterrupt:
            pass
        finally:
            state.unlink(missing_ok=True)
