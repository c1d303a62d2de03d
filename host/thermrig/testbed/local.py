"""A rig on a serial port (a device or a pyserial URL; None: $THERMRIG_PORT, the config file or a
running `thermrig sim`), and a drive under test on this machine: a block device or a file, checked by
the drive guard first (the one place it is checked)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from thermrig.config import resolve_port
from thermrig.drive.guard import UnsafeTarget, check_target
from thermrig.drive.under_test import LocalDrive
from thermrig.errors import ThermrigError
from thermrig.testbed.kinds import Identity, RigEnd


class DriveRefused(ThermrigError):
    """The drive guard refused the target (a mounted or system disk, a serial that differs, ...)."""


@dataclass(frozen=True)
class LocalDriveSpec:
    target: str
    size: str
    block_device: bool
    serial: str | None = None  # the serial the file names: checked against the device's
    destroy: bool = False  # writing over a block device allowed
    where: str = ""  # what names the target in errors (the campaign file)

    def checked(self) -> tuple[LocalDrive, Identity]:
        """The drive, checked (guard.check_target), and its identity."""
        try:
            facts = check_target(self.target, self.serial, self.destroy)
        except UnsafeTarget as exc:
            raise DriveRefused(str(exc)) from exc
        if self.block_device and not facts.block_device:  # fio would create a plain file under /dev
            raise DriveRefused(f"{self.where}: [drive] target {self.target} is not a block device on this machine")
        identity = {"device_serial": facts.serial, "device_model": facts.model, "device_firmware": facts.firmware}
        return LocalDrive(self.target, size=self.size, block_device=self.block_device), identity


@dataclass(frozen=True)
class LocalRig:
    port: str | None = None
    speed: float | None = None  # the rig is `thermrig sim --speed N` elsewhere: its pace, for the heartbeat
    drive: LocalDriveSpec | None = None

    def open(self, stack: contextlib.ExitStack) -> RigEnd:
        drive, identity = self.drive.checked() if self.drive is not None else (None, {})
        port = resolve_port(self.port).port
        return RigEnd(port, port, drive=drive, identity=identity, speed=self.speed)
