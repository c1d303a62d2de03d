"""Flash a board end to end: build, put the rig there in its safe state, upload, wait for the port to
come back, and check HELLO reports the version just built."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from thermrig.flash.flasher import Flasher, FlashError
from thermrig.link.rig_link import NakError, RigTimeout
from thermrig.link.transport import PortError
from thermrig.protocol.messages import ProtocolError, RigInfo
from thermrig.testbed import LocalRig, open_testbed

COMEBACK_S = 20.0  # how long the rig may take to answer again after an upload


def _safe(port: str) -> None:
    """Best effort: whatever runs there now (or failed to be replaced) stops heating."""
    quiet = contextlib.suppress(PortError, RigTimeout, NakError, ProtocolError, OSError)
    with quiet, open_testbed(LocalRig(port), keepalive=False, hello_timeout=0.5):
        pass  # SAFE on the way out


def wait_for_rig(port: str, timeout: float = COMEBACK_S) -> RigInfo:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            with open_testbed(LocalRig(port), keepalive=False) as bed:
                return bed.info  # the rig left safe
        except (PortError, RigTimeout, NakError, ProtocolError, OSError) as exc:
            last = str(exc)
            time.sleep(0.2)
    raise FlashError(f"the rig on {port} is silent after flashing ({timeout:.0f} s without a HELLO reply: {last})")


def flash(f: Flasher, port: str, say: Callable[[str], None], timeout: float = COMEBACK_S) -> RigInfo:
    say(f"building the {f.board} firmware")
    built = f.build()
    _safe(port)
    say(f"uploading {built} to the {f.board}")
    try:
        f.upload(port)
    except FlashError:
        _safe(port)
        raise
    say(f"waiting for the rig on {port}")
    info = wait_for_rig(port, timeout)
    if info.version != built:
        raise FlashError(
            f"version differs: the rig on {port} reports {info.firmware} {info.version} after flashing, "
            f"but {built} was built; it is left in its safe state"
        )
    return info
