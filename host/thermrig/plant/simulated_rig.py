"""SimulatedRig: the plant model and the firmware core (rigsim) wired together, serial side on a pty."""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from thermrig.errors import ThermrigError
from thermrig.paths import rigsim_binary
from thermrig.plant.drive_profiles import load_drive_profile
from thermrig.plant.faults import FaultInjector
from thermrig.plant.model import Plant
from thermrig.plant.profiles import DriveThermalParams, load_chassis, load_drive_thermal, load_slot
from thermrig.plant.server import PlantServer
from thermrig.plant.virtual_drive import VirtualDrive
from thermrig.plant.wires import SensorBank


class SimError(ThermrigError, RuntimeError):
    """The simulated rig could not start."""


@dataclass(frozen=True)
class SimConfig:
    slot: str = "top"
    heatsink: str = "none"
    seed: int = 0
    speed: float | None = None  # None: real time; N: N x real time; 0: as fast as possible
    stepped: bool = False  # tests: virtual time advances only through advance()
    ppm: float = 0.0  # simulated crystal error of the MCU
    offset_us: int = 0  # MCU uptime at the simulation's start
    room_c: float | None = None
    link: Path | None = None  # a stable symlink to the pty
    drive: str | None = None  # a virtual drive profile (hardware/profiles/drives.toml) served to fio
    drive_scale: float = 0.1  # the virtual drive's bandwidth on the wire per byte it models


@dataclass(frozen=True)
class SimTruth:
    """What rigsim reports about its clock, for judging time sync against the truth."""

    t0_unix_us: int
    ppm: float
    offset_us: int

    def utc_of_mcu(self, mcu_us: int) -> float:
        """The true UTC (s) at which the MCU's uptime read mcu_us (real-time mode)."""
        return (self.t0_unix_us + (mcu_us - self.offset_us) / (1.0 + self.ppm * 1e-6)) * 1e-6


class SimulatedRig:
    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = cfg = config or SimConfig()
        chassis = load_chassis()
        self.drive: VirtualDrive | None = None
        profile = load_drive_profile(cfg.drive) if cfg.drive else None
        self._drive_profile = profile
        self.plant = Plant(chassis, load_slot(cfg.slot), self._thermal(cfg.heatsink), room_c=cfg.room_c)
        self.sensors = SensorBank(self.plant, cfg.seed)
        self._tmp = tempfile.TemporaryDirectory(prefix="thermrig-sim-")
        sock = str(Path(self._tmp.name) / "plant.sock")
        speed = None if cfg.speed is None and not cfg.stepped else (cfg.speed or 0.0)
        self.server = PlantServer(self.plant, self.sensors, sock, speed, cfg.stepped)
        if profile is not None:
            self.drive = VirtualDrive(profile, cfg.drive_scale)
            self.server.hooks.append(self.drive.on_tick)
        binary = rigsim_binary()
        if not binary.exists():
            self.close()
            raise SimError(f"{binary} is missing: build it with `make rigsim` (or set THERMRIG_RIGSIM)")
        cmd = [str(binary), "--plant", sock, "--ppm", str(cfg.ppm), "--offset-us", str(cfg.offset_us)]
        if speed is None:
            cmd.append("--realtime")
        link = cfg.link or Path(self._tmp.name) / "rig-tty"
        cmd += ["--link", str(link)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        try:
            hello = json.loads(first)
        except json.JSONDecodeError as exc:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            self.close()
            raise SimError(f"rigsim did not start: {first!r} {err}") from exc
        # The port is a symlink that follows the pty across a simulated unplug, as /dev/serial/by-id does.
        self.port: str = str(link)
        self.truth = SimTruth(int(hello["t0_unix_us"]), float(hello["ppm"]), int(hello["offset_us"]))
        self.faults = FaultInjector(self.plant, self.sensors, self.server)
        if cfg.stepped:
            self.server.wait_ready()

    def __enter__(self) -> SimulatedRig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_physical(self, slot: str | None = None, heatsink: str | None = None) -> None:
        """What the operator does by hand on a real rig: move the drive, fit or remove a heatsink."""
        if slot is not None:
            self.plant.slot = load_slot(slot)
        if heatsink is not None:
            self.plant.drive = self._thermal(heatsink)

    def _thermal(self, heatsink: str) -> DriveThermalParams:
        base = load_drive_thermal(heatsink)
        return self._drive_profile.thermal(base) if self._drive_profile is not None else base

    def set_speed(self, speed: float) -> None:
        """Accelerated simulations: N x real time from now on (1 while fio runs against the virtual drive,
        so its logs keep true time; faster through equilibrium and cool-down)."""
        self.server.set_speed(speed)

    def advance(self, seconds: float) -> None:
        self.server.advance(seconds)

    @property
    def virtual_time(self) -> float:
        return self.plant.t

    def close(self) -> None:
        if getattr(self, "proc", None) is not None and self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "proc", None) is not None:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
        if self.drive is not None:
            self.drive.close()
        self.server.close()
        self._tmp.cleanup()
