"""A lab place as a kind of testbed (thermrig.testbed): the place's rig through its RFC 2217 port, the
drive in its test PC (fio in client/server mode, its fio server checked first; its smart-log read over
SSH), the drive's identity, and the tags every point recorded there carries (the rig, the place, the
test PC and the firmware its rig's HELLO reports). open_testbed does the rest as for any rig: the
greeting, the heartbeat, the health check, SAFE however it ends."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from thermrig.campaign.spec import DriveSpec
from thermrig.fio.runner import FioError
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.lab.acquired import HeldPlace
from thermrig.lab.errors import LabError
from thermrig.lab.remote_fio import check_fio_server
from thermrig.lab.test_pc_drive import TestPcDrive
from thermrig.lab.test_pc_smart import SmartOverSsh, controller
from thermrig.testbed import RigEnd


def drive_identity(d: DriveSpec) -> dict[str, str | None]:
    if not d.is_virtual:
        return {"device_serial": d.serial}
    return load_drive_profile(d.profile).identity()


@dataclass(frozen=True)
class PlaceTestbed:
    held: HeldPlace
    drive: DriveSpec
    ssh_key: str = ""  # logs in to the test PC (smart-log over SSH); "": ssh's own

    def open(self, stack: contextlib.ExitStack) -> RigEnd:
        held = self.held
        if held.fio is None:
            raise LabError(f"place {held.name}: no fio server in its resources (thermrig lab export --test-pc)")
        try:
            check_fio_server(held.fio, held.name)
        except FioError as exc:  # it names the place
            raise LabError(str(exc)) from exc
        smart = None
        if held.ssh is not None:
            smart = SmartOverSsh(held.ssh, controller(self.drive.target), held.name, self.ssh_key).start()
            stack.callback(smart.stop)
        drive = TestPcDrive(held.name, self.drive, held.fio, smart.telemetry() if smart else None)
        identity = drive_identity(self.drive)
        return RigEnd(
            held.name, held.serial_url, drive, identity=identity, tags=lambda info: held.point_tags(info.version)
        )
