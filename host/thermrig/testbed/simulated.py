"""A simulated rig started here: the plant and a firmware (rigsim, Zephyr in QEMU, MicroPython), its
pace, the chassis it plays (a named one, some parameters scaled: how `rig tune --sim` tries a chassis
unlike the default one), a miswired rig, and the drive under test: the virtual drive it serves, or a
file on this machine. The one place besides `thermrig sim` itself where the simulator is built."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from thermrig.dut.pacing import Pacing
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.sim.drive_under_test import SimulatedDrive
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.testbed.kinds import RigEnd
from thermrig.testbed.local import LocalDriveSpec
from thermrig.virtual_drive.file_system import DriveFileSystem

# The chassis parameters a simulated testbed may scale (name: ChassisParams field).
CHASSIS_SCALES = {"heater": "heater_max_w", "air": "air_capacity", "fan": "g_fan"}


@dataclass(frozen=True)
class SimulatedRigSpec:
    pacing: Pacing = field(default_factory=Pacing.stepped)
    firmware: str = "rigsim"
    slot: str = "top"
    seed: int = 0
    chassis: str | None = None  # a named chassis profile; None: the default
    chassis_scales: dict[str, float] = field(default_factory=dict)  # CHASSIS_SCALES' names: factor
    swapped_tcs: tuple[int, int] | None = None  # a miswired rig: two thermocouples' chip selects exchanged
    image: Path | None = None  # the firmware's image, where it has one (a board build's variant)
    drive_profile: str | None = None  # the virtual drive it serves (hardware/profiles/drives.toml)
    drive_scale: float = 0.1
    drive_keep_data: int = 0  # bytes of written data the virtual drive keeps at most; 0: it drops them
    drive_filesystem: bool = False  # ext4 made on the virtual drive and mounted, for the testbed's life
    drive_file_size: str = "1g"  # the file fio writes on that file system
    local_drive: LocalDriveSpec | None = None  # or a block device or file on this machine

    def config(self) -> SimConfig:
        return SimConfig(
            slot=self.slot,
            seed=self.seed,
            pacing=self.pacing,
            firmware=self.firmware,
            chassis=self.chassis,
            swapped_tcs=self.swapped_tcs,
            image=self.image,
            drive=self.drive_profile,
            drive_scale=self.drive_scale,
            drive_keep_data=self.drive_keep_data,
        )

    def rig(self) -> SimulatedRig:
        """The simulated rig, not started, its chassis scaled."""
        rig = SimulatedRig(self.config())
        c = rig.plant.chassis
        scaled = {CHASSIS_SCALES[k]: getattr(c, CHASSIS_SCALES[k]) * f for k, f in self.chassis_scales.items()}
        if any(f != 1.0 for f in self.chassis_scales.values()):
            rig.plant.chassis = dataclasses.replace(c, **scaled)  # read by the plant at every step
        return rig

    def open(self, stack: contextlib.ExitStack) -> RigEnd:
        local = self.local_drive.checked() if self.local_drive is not None else None  # before anything starts
        sim = stack.enter_context(self.rig())
        stepped = self.pacing.is_stepped
        speed = None if stepped else (self.pacing.factor if self.pacing.mode == "accelerated" else 1.0) or None
        end = RigEnd("sim", sim.port, sim=sim, speed=speed, stepped=stepped)
        if local is not None:
            end.drive, end.identity = local
        elif self.drive_profile is not None:
            files = None
            if self.drive_filesystem:
                assert sim.drive is not None
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="thermrig-fs-")))
                files = stack.enter_context(DriveFileSystem(sim.drive.uri, folder)).mountpoint
            drive = SimulatedDrive(sim, files, self.drive_file_size)
            end.drive, end.identity = drive, load_drive_profile(self.drive_profile).identity()
        return end
