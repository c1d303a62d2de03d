"""The simulated rig's virtual drive as a drive under test (thermrig.dut.drive.DriveUnderTest): served
to fio over NBD, its own telemetry the model's smart-log, a fill set in the model at once, the
simulation at real time while fio runs (so fio's timing is true), at its own pace again afterwards, and
the model's id-ctrl and HCTM feature as its thermal management."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from thermrig.drive.monitor import smart_json_source
from thermrig.drive.thermal_config import ThermalConfigError
from thermrig.drive.under_test import NbdExport
from thermrig.dut.drive import DriveLost, DriveTelemetry, Fill, ThermalManagement, WorkDone
from thermrig.dut.pacing import Pacing
from thermrig.sim.firmware.base import SimError
from thermrig.sim.simulated_rig import SimulatedRig
from thermrig.virtual_drive.drive_model import DriveModel
from thermrig.virtual_drive.served import VirtualDrive

WHILE_SERVING = Pacing.accelerated(1.0)


@dataclass(frozen=True)
class ModelThermal:
    """The virtual drive's answers to `nvme id-ctrl` and the HCTM feature (get-feature/set-feature 0x10)."""

    model: DriveModel

    def identify(self) -> str:
        return json.dumps(self.model.id_ctrl())

    def hctm(self) -> int:
        return self.model.hctm

    def set_hctm(self, value: int) -> None:
        try:
            self.model.set_hctm(value)
        except ValueError as exc:  # what the drive answers: Invalid Field in Command
            raise ThermalConfigError(f"the virtual drive refused set-feature 0x10: {exc}") from exc


class SimulatedDrive:
    """files: a file system mounted on the drive (DriveFileSystem.mountpoint): fio then works on a file
    of `file_size` there, as on a real drive's file system, and fills are written, not set."""

    def __init__(self, rig: SimulatedRig, files: Path | None = None, file_size: str = "1g") -> None:
        self.rig = rig
        self.files = files
        self.file_size = file_size

    @property
    def _drive(self) -> VirtualDrive:
        if self.rig.drive is None:
            raise SimError("the virtual drive needs the simulated rig started with a drive profile")
        return self.rig.drive

    @property
    def name(self) -> str:
        return "virtual"

    @property
    def size(self) -> str:
        return self.file_size if self.files is not None else ""

    @property
    def scale(self) -> float:
        return self._drive.scale

    @property
    def fio_server(self) -> str | None:
        return None  # fio runs here

    def fio_lines(self, iodepth: int) -> list[str]:
        if self.files is not None:  # O_DIRECT: the file system's I/O reaches the drive as it happens
            engine = "psync" if iodepth == 1 else "libaio"
            return [f"filename={self.files / 'thermrig-fio.dat'}", f"ioengine={engine}", "direct=1"]
        return NbdExport(self._drive.uri).fio_lines(iodepth)

    def telemetry(self) -> DriveTelemetry:
        smart = smart_json_source(self._drive.model.smart_log_json)
        exchange = self._drive.exchange
        starved = exchange.accounts().starved_s  # the drive's starved time before this run's first sample

        def sample() -> dict[str, float | int]:
            """The model's smart-log, and the simulator's own record of the host since the last sample: the
            plant's latest tick and nbdkit's latest reply (docs/analysis.md, "One time"), and the time the
            drive had nothing to do while the host sent nothing (docs/analysis.md, "Whose fall it is")."""
            nonlocal starved
            fields = smart()
            if self.rig.server is not None:
                fields["sim_plant_late_ms"] = round(1000.0 * self.rig.server.take_worst_late_s(), 3)
            fields["sim_drive_late_ms"] = round(1000.0 * exchange.take_worst_late_s(), 3)
            now = exchange.accounts().starved_s
            fields["sim_drive_starved_ms"] = round(1000.0 * (now - starved), 3)
            starved = now
            return fields

        return DriveTelemetry(sample, "the virtual drive's smart-log and the simulator's lateness")

    def work_done(self) -> WorkDone | None:
        """The plugin's accounts: the bytes the drive wrote and the time it had nothing in flight."""
        accounts = self._drive.exchange.accounts()
        return WorkDone(accounts.bytes_written, accounts.starved_s)

    def take_fill(self, fill: Fill) -> bool:
        """Purge, then the fill's sequential passes in the model, as the methods begin (AnandTech's
        consistency test from a secure erase, SNIA PTS from a purge): no writing twice the capacity.
        Not under a file system: the purge would erase it."""
        if self.files is not None:
            return False
        self._drive.model.fill(fill.span, fill.passes)
        self._drive.publish()  # the plugin serves the filled drive's figures from the first request
        return True

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """While fio runs; a drive server (nbdkit) that died under it stops the campaign, in one line."""
        drive, between = self._drive, self.rig.pacing
        refused = drive.accounts().refused_writes
        self.rig.set_pacing(WHILE_SERVING)
        try:
            yield
        except Exception as exc:  # fio fails when the server dies under it: say why, not fio's error
            if (failure := drive.poll()) is not None:
                raise DriveLost(f"{failure}; the campaign stops (rig is safe)") from exc
            if drive.accounts().refused_writes > refused and (full := drive.refused()) is not None:
                raise DriveLost(f"{full}; the campaign stops (rig is safe)") from exc
            raise
        finally:
            drive.idle()
            self.rig.set_pacing(between)
        if (failure := drive.poll()) is not None:
            raise DriveLost(f"{failure}; the campaign stops (rig is safe)")

    def thermal(self) -> ThermalManagement | None:
        return ModelThermal(self._drive.model)
