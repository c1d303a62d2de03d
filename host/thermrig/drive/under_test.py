"""The drives a campaign can test that are not simulated: a block device, a file (created at its size)
and an NBD export (a drive served by another machine or process). Each implements
thermrig.dut.drive.DriveUnderTest: how fio reaches it, its own telemetry, no filled state at once, and
the NVMe thermal management (nvme-cli) of the controller behind a device or a file's file system."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from thermrig.drive.monitor import nvme_controller_for, nvme_source
from thermrig.drive.thermal_config import NvmeCli
from thermrig.dut.drive import DriveTelemetry, Fill, ThermalManagement, WorkDone


@dataclass(frozen=True)
class LocalDrive:
    """A block device, or a file on a file system (created at `size`); O_DIRECT only on a block device
    (not every file system has it)."""

    path: str
    size: str = ""  # files only
    block_device: bool = False
    scale: float = 1.0

    @property
    def name(self) -> str:
        return self.path

    @property
    def fio_server(self) -> str | None:
        return None  # fio runs here

    def fio_lines(self, iodepth: int) -> list[str]:
        engine = "psync" if iodepth == 1 else "libaio"
        return [f"filename={self.path}", f"ioengine={engine}", f"direct={1 if self.block_device else 0}"]

    def telemetry(self) -> DriveTelemetry:
        """`nvme smart-log` and hwmon of the NVMe controller behind the device or the file's file system."""
        controller = nvme_controller_for(self.path)
        if controller is None:
            return DriveTelemetry(None, "none")
        return DriveTelemetry(nvme_source(controller), f"nvme smart-log and hwmon of {controller}")

    def work_done(self) -> WorkDone | None:
        return None  # no count of its own work reaches us

    def take_fill(self, fill: Fill) -> bool:
        return False  # a real drive is filled by writing

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        yield

    def thermal(self) -> ThermalManagement | None:
        """nvme-cli on the NVMe controller behind the device or the file's file system."""
        controller = nvme_controller_for(self.path)
        return None if controller is None else NvmeCli(f"/dev/{controller}")


@dataclass(frozen=True)
class NbdExport:
    """A block device served over NBD (fio's `nbd` engine): its size is the export's."""

    uri: str  # nbd+unix:///?socket=PATH or nbd://host:port/export
    scale: float = 1.0  # wire bytes per drive byte, for a server that scales its rates

    @property
    def name(self) -> str:
        return self.uri

    @property
    def size(self) -> str:
        return ""

    @property
    def fio_server(self) -> str | None:
        return None  # fio runs here

    def fio_lines(self, iodepth: int) -> list[str]:
        return ["ioengine=nbd", f"uri={self.uri}"]

    def telemetry(self) -> DriveTelemetry:
        return DriveTelemetry(None, "none")

    def work_done(self) -> WorkDone | None:
        return None  # no count of its own work reaches us

    def take_fill(self, fill: Fill) -> bool:
        return False

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        yield

    def thermal(self) -> ThermalManagement | None:
        return None  # the drive behind the export is the server's
