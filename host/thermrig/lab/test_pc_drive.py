"""The drive under test of a lab place (thermrig.dut.drive.DriveUnderTest): the drive in the place's
test PC, which fio reaches through the fio server there (fio's client/server mode). The campaign's
[drive] target is a path on the test PC (its NVMe namespace, or a file); "virtual" is a simulated test
PC's virtual drive, served over NBD on the socket VIRTUAL_DRIVE_SOCKET in its fio server's working
folder. In a sealed lab the fio server listens on the test PC's loopback and fio reaches it through an
SSH forward (thermrig.lab.ssh_forward). A fio server that stops answering, or a forward that drops, is
the place lost: DriveLost, naming the place."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from thermrig.campaign.spec import DriveSpec
from thermrig.drive.under_test import LocalDrive, NbdExport
from thermrig.dut.drive import DriveLost, DriveTelemetry, Fill, ThermalManagement, WorkDone
from thermrig.lab.client import Endpoint
from thermrig.lab.remote_fio import fio_answers
from thermrig.lab.ssh_forward import SshForward, far_end_answers

VIRTUAL_DRIVE_SOCKET = "thermrig-drive.sock"  # a simulated test PC: its virtual drive, beside its fio server


@dataclass(frozen=True)
class TestPcDrive:
    place: str
    spec: DriveSpec
    server: Endpoint  # the test PC's fio server (in a sealed lab: its port on the test PC's loopback)
    telemetry_source: DriveTelemetry | None = None  # None: not read
    forward: SshForward | None = None  # a sealed lab's way to the fio server; None: straight to it

    __test__ = False  # not a pytest class

    @property
    def _drive(self) -> LocalDrive | NbdExport:
        if self.spec.is_virtual:
            return NbdExport(f"nbd+unix:///?socket={VIRTUAL_DRIVE_SOCKET}", self.spec.scale)
        return LocalDrive(self.spec.target, self.spec.size, self.spec.is_block_device)

    @property
    def name(self) -> str:
        return f"{self.server.host}:{self.spec.target}"

    @property
    def size(self) -> str:
        return self._drive.size

    @property
    def scale(self) -> float:
        return self._drive.scale

    @property
    def fio_server(self) -> str | None:
        reached = self.forward.local if self.forward else self.server
        return f"{reached.host},{reached.port}"

    def fio_lines(self, iodepth: int) -> list[str]:
        return self._drive.fio_lines(iodepth)

    def telemetry(self) -> DriveTelemetry:
        return self.telemetry_source or DriveTelemetry(None, "none")

    def work_done(self) -> WorkDone | None:
        return None  # no count of its own work reaches us

    def take_fill(self, fill: Fill) -> bool:
        return False  # written by fio, on the test PC

    def thermal(self) -> ThermalManagement | None:
        """Not reached on a test PC yet (its nvme-cli over SSH is read for the smart-log only): a
        campaign with an `hctm` factor is refused before its first run, and no thermal configuration
        is recorded."""
        return None

    def check(self) -> None:
        """DriveLost naming the place when its test PC's fio server, or the SSH forward to it, does not answer."""
        where = f"place {self.place}: its test PC's fio server at {self.server.host},{self.server.port}"
        if self.forward is None:
            why = fio_answers(self.server)
        else:
            why = far_end_answers(self.forward.local_port)
            where += " (through SSH)"
            if why is not None and not self.forward.alive(settle_s=1.0):
                raise DriveLost(f"place {self.place}: {self.forward.describe} was lost ({self.forward.ended()})")
        if why is not None:
            raise DriveLost(f"{where} does not answer ({why})")

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """While fio runs there: a fio that failed because the server went away is the place lost."""
        self.check()
        try:
            yield
        except Exception:
            self.check()
            raise
