"""SimulatedRig: the plant model and a firmware (rigsim, Zephyr in QEMU, ...) wired together, the
firmware's serial side on a pty behind a stable symlink."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from thermrig.dut.pacing import Pacing
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.hardware.profiles import DriveThermalParams, load_chassis, load_drive_thermal, load_slot
from thermrig.link.rig_link import RigLink
from thermrig.link.timesync import FREE, ClockPace
from thermrig.sim import firmware as firmwares
from thermrig.sim.fault_injection import FaultInjector
from thermrig.sim.firmware.base import Firmware, LaunchContext, SimError, SimTruth
from thermrig.sim.plant import Plant
from thermrig.sim.server import PlantServer
from thermrig.sim.wires import TICK_S, SensorBank
from thermrig.virtual_drive.served import VirtualDrive

__all__ = ["ClockListener", "SimConfig", "SimError", "SimTruth", "SimulatedRig"]
T = TypeVar("T")

# Told how the firmware's clock runs against the host's, and from which host UTC (RigLink.follow_pace).
ClockListener = Callable[[ClockPace, float], None]


@dataclass(frozen=True)
class SimConfig:
    slot: str = "top"
    heatsink: str = "none"
    seed: int = 0
    pacing: Pacing = field(default_factory=Pacing.realtime)  # Pacing.stepped(): time advances by advance()
    ppm: float = 0.0  # simulated crystal error of the MCU
    offset_us: int = 0  # MCU uptime at the simulation's start
    room_c: float | None = None
    link: Path | None = None  # a stable symlink to the pty
    drive: str | None = None  # a virtual drive profile (hardware/profiles/drives.toml) served to fio
    serve_drive: bool = True  # False: the drive profile's thermal figures only, nothing served (a model's heat)
    drive_scale: float = 0.1  # the virtual drive's rates on the wire (bandwidth, IOPS) per rate it models
    drive_keep_data: int = 0  # the virtual drive keeps what is written, this many bytes at most; 0: drops it
    firmware: str = "rigsim"  # which firmware runs against the plant (thermrig.sim.firmware)
    swapped_tcs: tuple[int, int] | None = None  # a miswired rig: two thermocouples' chip selects exchanged
    image: Path | None = None  # the firmware's image, where it has one (a board build's variant); default: the build's
    chassis: str | None = None  # a named chassis (`thermrig rig identify`); None: hardware/profiles/chassis.toml


class SimulatedRig:
    """Built from its configuration; started (plant server, virtual drive, firmware) by start() or
    `with`. A start that fails closes what it had started."""

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = cfg = config or SimConfig()
        self.drive: VirtualDrive | None = None
        self.firmware: Firmware | None = None
        self.server: PlantServer | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._restarting = threading.Lock()
        self._drive_profile = load_drive_profile(cfg.drive) if cfg.drive else None
        self.plant = Plant(
            load_chassis(cfg.chassis), load_slot(cfg.slot), self._thermal(cfg.heatsink), room_c=cfg.room_c
        )
        self.sensors = SensorBank(self.plant, cfg.seed, swapped=cfg.swapped_tcs)
        self._pacing = cfg.pacing

    def start(self) -> SimulatedRig:
        cfg = self.config
        try:
            self._tmp = tempfile.TemporaryDirectory(prefix="thermrig-sim-")
            sock = str(Path(self._tmp.name) / "plant.sock")
            self.server = PlantServer(self.plant, self.sensors, sock, cfg.pacing).start()
            if self._drive_profile is not None and cfg.serve_drive:
                self.drive = VirtualDrive(self._drive_profile, cfg.drive_scale, cfg.drive_keep_data)
                self.drive.start()
                self.server.hooks.append(self._drive_tick)
            self._ctx = LaunchContext(
                plant_sock=sock,
                link=cfg.link or Path(self._tmp.name) / "rig-tty",
                workdir=Path(self._tmp.name),
                server=self.server,
                realtime=cfg.pacing.is_realtime,
                ppm=cfg.ppm,
                offset_us=cfg.offset_us,
                image=cfg.image,
            )
            self.firmware = firmwares.launch(cfg.firmware, self._ctx)
            # The port is a symlink that follows the pty across a simulated unplug, as /dev/serial/by-id does.
            self.port: str = self.firmware.port
            self.truth: SimTruth = self.firmware.truth
            self.proc = self.firmware.proc
            self.faults = FaultInjector(self.plant, self.sensors, self.firmware)
            if cfg.pacing.is_stepped:
                self.server.wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def _drive_tick(self, plant: Plant) -> None:
        """PlantServer hook: the drive's power for the next tick from the work it served."""
        assert self.drive is not None
        plant.drive_power_w = self.drive.tick(TICK_S, plant.state.ctrl, plant.state.board)

    def restart_firmware(self, image: Path | None = None) -> None:
        """Run the firmware again, from `image` if given (what flashing does to a real board: the MCU
        reboots on the new image, the plant runs on, the port comes back behind the same link)."""
        assert self.firmware is not None and self.server is not None
        ctx = replace(self._ctx, image=image or self._ctx.image)
        with self._restarting, self.server.replacing_firmware():
            self.firmware.close()
            try:
                self.firmware = firmwares.launch(self.config.firmware, ctx)
                self._ctx = ctx
            except SimError:  # nothing half-done: the rig runs its previous image again
                self.firmware = firmwares.launch(self.config.firmware, self._ctx)
                raise
            finally:
                self.proc = self.firmware.proc
                self.truth = self.firmware.truth
                self.faults.firmware = self.firmware

    def exit_status(self) -> int | None:
        """The firmware process's exit status once it has died on its own (None while it runs or is being
        restarted)."""
        if not self._restarting.acquire(blocking=False):
            return None
        try:
            return self.proc.poll()
        finally:
            self._restarting.release()

    def __enter__(self) -> SimulatedRig:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_physical(self, slot: str | None = None, heatsink: str | None = None) -> None:
        """What the operator does by hand on a real rig: move the drive, fit or remove a heatsink."""
        if slot is not None:
            self.plant.slot = load_slot(slot)
        if heatsink is not None:
            self.plant.drive_thermal = self._thermal(heatsink)

    def _thermal(self, heatsink: str) -> DriveThermalParams:
        base = load_drive_thermal(heatsink)
        return self._drive_profile.thermal(base) if self._drive_profile is not None else base

    @property
    def pacing(self) -> Pacing:
        return self._pacing

    def set_pacing(self, pacing: Pacing) -> None:
        """An accelerated simulation's new pace from now on (1x while fio runs against the virtual drive,
        so its logs keep true time; faster through equilibrium and cool-down). The pace it has already: nothing
        changes (the clock's watchers are not told)."""
        if pacing == self._pacing:
            return
        if pacing.mode != "accelerated" or self._pacing.mode != "accelerated":
            was, wanted = self._pacing.describe(), pacing.describe()
            raise SimError(f"only an accelerated simulation changes its pace ({was} to {wanted})")
        assert self.server is not None
        self.server.set_speed(pacing.factor)
        self._pacing = pacing

    def clock_pace(self, speed: float | None = None) -> ClockPace:
        """How the firmware's clock runs against the host's: a staircase of plant ticks at 1 / speed host
        seconds per MCU second when the plant paces it, its own clock otherwise."""
        assert self.firmware is not None
        speed = self.server.speed if speed is None else speed
        if speed is None or not self.firmware.clock_follows_plant:
            return FREE
        return ClockPace(1.0 / speed if speed else None, round(TICK_S * 1e6))

    def watch_clock(self, listener: ClockListener) -> None:
        """Tell listener the clock's pace now and at every speed change (from the moment the firmware's
        clock runs at it): a host's time sync restarts its fit there instead of straddling two paces."""
        listener(self.clock_pace(), time.time())
        self.server.speed_listeners.append(lambda speed, at: listener(self.clock_pace(speed), at))

    def advance(self, seconds: float) -> None:
        assert self.server is not None and self.firmware is not None
        self.server.advance(seconds)
        self.firmware.settle()

    def follow_host(self, link: RigLink) -> None:
        """The host's frames on link hold this simulation's time faster than real time: the plant goes no
        further than half a host timeout past the last one until it writes again, for as long as a real
        rig would wait for it (host_gate.py)."""
        assert self.server is not None
        link.add_send_listener(self.server.host_wrote)

    def run_alongside(
        self, link: RigLink, work: Callable[[], T], step_s: float = 1.0, ping_timeout_s: float | None = None
    ) -> T:
        """A stepped simulation with a host procedure: work() runs in a thread while virtual time advances
        step_s at a time, the host's heartbeat (a PING on link) between, whatever the machine's load;
        returns its result or raises its exception. ping_timeout_s: per PING attempt (default the
        link's); virtual time waits for the reply, so a long one costs nothing but patience."""
        result: list[T] = []
        error: list[BaseException] = []

        def run() -> None:
            try:
                result.append(work())
            except BaseException as exc:  # handed to the caller
                error.append(exc)

        worker = threading.Thread(target=run, name="sim-host-procedure")
        worker.start()
        while worker.is_alive():
            if ping_timeout_s is None:
                link.ping()
            else:
                link.ping(ping_timeout_s)
            self.advance(step_s)
        worker.join()
        if error:
            raise error[0]
        return result[0]

    def chassis_air_c(self) -> float:
        return self.plant.state.air

    def touch(self, place: str, held: bool = True) -> None:
        """An operator holds (or lets go of) the thermocouple bead at a place (TC_PLACES)."""
        self.sensors.touch(place, held)

    def actuators(self) -> tuple[float, list[float]]:
        """The heater's and the fans' duty (0-1) the plant receives from the firmware."""
        return self.plant.heater_duty, list(self.plant.fan_duty)

    def driven(self) -> tuple[float, list[float]]:
        """The heater's and the fans' duty (0-1) the firmware drives at the plant's present time, as its
        outputs after the last sample say; the plant applies them over its next step (actuators())."""
        assert self.server is not None
        heater, fan0, fan1 = self.server.driven
        return heater, [fan0, fan1]

    @property
    def virtual_time(self) -> float:
        return self.plant.t

    def close(self) -> None:
        """Close what start() started, in reverse; a half-started rig closes its started part."""
        for part in (self.firmware, self.drive, self.server):
            if part is not None:
                part.close()
        self.firmware, self.drive, self.server = None, None, None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
