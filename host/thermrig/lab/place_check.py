"""A held place checked (`thermrig lab check`): its rig greeted through the place's RFC 2217 port (the
firmware it reports noted on the place for `lab status` and compared with this checkout's), its test
PC's fio server and SSH; a line for each that answers, one naming each that does not."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from thermrig.errors import ThermrigError
from thermrig.fio.runner import FioError
from thermrig.firmware_identity import checkout_verdict, checkout_version
from thermrig.lab.acquired import HeldPlace, note_firmware
from thermrig.lab.client import LabClient
from thermrig.lab.errors import LabError
from thermrig.lab.remote_fio import check_fio_server, check_fio_through_ssh
from thermrig.lab.services import check_ssh
from thermrig.link.rig_link import RigLink
from thermrig.testbed import LocalRig, open_testbed


@contextlib.contextmanager
def place_rig(held: HeldPlace) -> Iterator[RigLink]:
    """The place's rig, greeted and left as it is; its errors name the place."""
    try:
        with open_testbed(LocalRig(held.serial_url), keepalive=False, leave_as_is=True) as bed:
            yield bed.link
    except LabError:
        raise
    except ThermrigError as exc:
        raise LabError(f"place {held.name}: {exc}") from exc


def check_place(
    client: LabClient, held: HeldPlace, said: Callable[[str], None], *, insecure: bool = False
) -> list[str]:
    """The rig, the fio server (through an SSH forward unless insecure, or the place has no SSH) and SSH in
    turn: said gets a line for each that answers; the lines of those that do not are returned."""
    failed = []
    try:
        with place_rig(held) as link:
            assert link.info is not None
            note_firmware(client, held.name, link.info.version)  # `lab status` shows it
            _, verdict = checkout_verdict(link.info.version, checkout_version())
            said(f"rig: {link.info.firmware} {link.info.version} on {held.serial_url}; current: {verdict}")
    except LabError as exc:
        failed.append(str(exc))
    if held.fio is None:
        failed.append(f"place {held.name}: no fio server in its resources")
    else:
        try:
            if insecure or held.ssh is None:
                check_fio_server(held.fio, held.name)
            else:
                check_fio_through_ssh(held.fio, held.ssh, held.name)
            how = "" if insecure or held.ssh is None else " (through SSH)"
            said(f"fio server: {held.fio.host},{held.fio.port} answers{how}")
        except (FioError, LabError) as exc:
            failed.append(str(exc))
    if held.ssh is None:
        failed.append(f"place {held.name}: no SSH in its resources")
    else:
        try:
            banner = check_ssh(held.ssh, held.name)
            said(f"ssh: {held.ssh.user}@{held.ssh.host}:{held.ssh.port} answers ({banner})")
        except LabError as exc:
            failed.append(str(exc))
    return failed
