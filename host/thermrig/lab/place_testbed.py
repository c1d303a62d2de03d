"""A lab place as a kind of testbed (thermrig.testbed): the place's rig through its RFC 2217 port (an
isolated exporter's through the SSH forward its HeldPlace holds), the
drive in its test PC (fio in client/server mode, its fio server on the test PC's loopback reached
through an SSH forward open while the testbed is, or straight with `insecure`, checked first; its
smart-log read over SSH), the drive's identity, and the tags every point recorded there carries (the rig, the place, the
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
from thermrig.lab.ssh_forward import SshForward
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
    ssh_key: str = ""  # logs in to the test PC (smart-log, the fio forward); "": ssh's own
    insecure: bool = False  # True: fio's server straight over the network, not through SSH

    def _fio_forward(self, stack: contextlib.ExitStack) -> SshForward | None:
        """A sealed lab's way to the test PC's fio server (on its loopback): an SSH forward, open while the
        testbed is; the fio server checked either way (one line naming the place)."""
        held = self.held
        assert held.fio is not None
        if self.insecure:
            try:
                check_fio_server(held.fio, held.name)
            except FioError as exc:  # it names the place
                raise LabError(str(exc)) from exc
            return None
        if held.ssh is None:
            raise LabError(f"place {held.name}: no SSH in its resources, which its fio server is reached through")
        what = f"place {held.name}: its test PC's fio server at {held.fio.host},{held.fio.port}"
        return stack.enter_context(SshForward(held.ssh, held.fio.port, what, self.ssh_key))

    def open(self, stack: contextlib.ExitStack) -> RigEnd:
        held = self.held
        serial_url = held.serial_url  # LabError first when its SSH forward could not be opened
        if held.fio is None:
            raise LabError(f"place {held.name}: no fio server in its resources (thermrig lab export --test-pc)")
        forward = self._fio_forward(stack)
        smart = None
        if held.ssh is not None:
            smart = SmartOverSsh(held.ssh, controller(self.drive.target), held.name, self.ssh_key).start()
            stack.callback(smart.stop)
        drive = TestPcDrive(held.name, self.drive, held.fio, smart.telemetry() if smart else None, forward)
        identity = drive_identity(self.drive)
        return RigEnd(held.name, serial_url, drive, identity=identity, tags=lambda info: held.point_tags(info.version))
