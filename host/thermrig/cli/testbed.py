"""Where what a campaign runs on is built: the rig's port (a device, or a simulated rig started here)
and the drive under test (a block device or a file, checked first; or the simulated rig's virtual
drive), and the model replay the calibration fits. The procedures get them through thermrig.dut's
protocols; this module and the commands that run the simulated rig themselves (`thermrig sim`, `demo`,
`selftest --sim`) are the only ones that import the simulator; `rig tune --sim` gets its rig on a
scaled chassis here too."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

from thermrig.campaign.spec import Campaign, CampaignError
from thermrig.config import resolve_port
from thermrig.drive.guard import UnsafeTarget, check_target
from thermrig.drive.under_test import LocalDrive
from thermrig.dut.drive import DriveUnderTest
from thermrig.dut.pacing import Pacing
from thermrig.dut.replay import ModelReplay
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.sim import replay as plant_replay
from thermrig.sim.drive_under_test import SimulatedDrive
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.virtual_drive.file_system import DriveFileSystem

Identity = dict[str, str | None]


@dataclass
class Testbed:
    port: str
    sim: SimulatedRig | None
    drive: DriveUnderTest
    identity: Identity  # the drive's serial, model and firmware, for the manifest


def model_replay() -> ModelReplay:
    """The simulator's plant and drive model, replayed without rig or fio: what the calibration fits."""
    return plant_replay


def sim_config(c: Campaign) -> SimConfig:
    """The simulated rig of a campaign. With the virtual drive the plant paces itself (never rigsim), so
    the drive can run it at 1x while fio runs and at [rig] speed in between."""
    if c.drive.is_virtual:
        pacing = Pacing.accelerated(c.sim_speed)
        return SimConfig(
            pacing=pacing,
            drive=c.drive.profile,
            drive_scale=c.drive.scale,
            drive_keep_data=c.drive.keep_data,
            firmware=c.sim_firmware,
        )
    return SimConfig(pacing=Pacing.of_speed(c.sim_speed), firmware=c.sim_firmware)


def check_local_drive(c: Campaign, destroy: bool) -> tuple[LocalDrive, Identity] | None:
    """A block device or a file, checked (guard.check_target), and its identity; None for the virtual
    drive, which only exists once the simulated rig runs."""
    if c.drive.is_virtual:
        return None
    block = c.drive.is_block_device
    try:
        facts = check_target(c.drive.target, c.drive.serial, destroy)
    except UnsafeTarget as exc:
        raise CampaignError(str(exc)) from exc
    if block and not facts.block_device:  # fio would create a plain file under /dev
        raise CampaignError(f"{c.path}: [drive] target {c.drive.target} is not a block device on this machine")
    identity = {"device_serial": facts.serial, "device_model": facts.model, "device_firmware": facts.firmware}
    return LocalDrive(c.drive.target, size=c.drive.size, block_device=block), identity


def open_testbed(c: Campaign, local: tuple[LocalDrive, Identity] | None, stack: contextlib.ExitStack) -> Testbed:
    """What the campaign runs on, started and closed with `stack`; `local`: check_local_drive's."""
    if c.port != "sim":
        assert local is not None  # a campaign's virtual drive needs port = "sim" (spec.py)
        return Testbed(resolve_port(c.port).port, None, *local)
    sim = stack.enter_context(SimulatedRig(sim_config(c)))
    if local is not None:
        return Testbed(sim.port, sim, *local)
    files = None
    if c.drive.filesystem:  # ext4 made on the drive and mounted, for the campaign's life
        assert sim.drive is not None
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="thermrig-fs-")))
        files = stack.enter_context(DriveFileSystem(sim.drive.uri, folder)).mountpoint
    drive = SimulatedDrive(sim, files, c.drive.size)
    return Testbed(sim.port, sim, drive, load_drive_profile(c.drive.profile).identity())


# The chassis parameters `thermrig rig tune --sim` may scale (option name: ChassisParams field).
CHASSIS_SCALES = {"heater": "heater_max_w", "air": "air_capacity", "fan": "g_fan"}


def simulated_chassis_rig(chassis: str | None, scales: dict[str, float], seed: int = 0) -> SimulatedRig:
    """A stepped simulated rig (not started) on a named chassis (None: the default), with some of its
    parameters scaled (CHASSIS_SCALES' names: factor): how `rig tune --sim` tries a chassis unlike the
    default one without writing a profile."""
    rig = SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=seed, chassis=chassis))
    c = rig.plant.chassis
    scaled = {CHASSIS_SCALES[k]: getattr(c, CHASSIS_SCALES[k]) * f for k, f in scales.items() if f != 1.0}
    rig.plant.chassis = dataclasses.replace(c, **scaled)  # read by the plant at every step
    return rig
