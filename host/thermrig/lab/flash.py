"""Flashing a place's rig from anywhere (`thermrig flash --lab COORDINATOR --place P`): the board comes from the
place's tags; its firmware is built here as the local `thermrig flash` builds it (or a given image, or a release's
image for that board, checked against its manifest), the place is acquired, the image copied to the place's test PC
over SSH (a tar stream into a fresh folder there) and the board's upload tool run there: OpenOCD over the Nucleo's
ST-LINK (what PlatformIO's `upload_protocol = stlink` runs), mpremote over the Pico's USB. Then HELLO, through the
place's serial port (RFC 2217), must report the version built; the place is released whatever happens."""

from __future__ import annotations

import contextlib
import io
import shlex
import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from thermrig.firmware_identity import checkout_version
from thermrig.flash.flasher import FlashError
from thermrig.flash.openocd import OPENOCD_TARGETS, openocd_command
from thermrig.flash.pico import PicoFlasher
from thermrig.flash.platformio import PlatformIOFlasher
from thermrig.flash.procedure import COMEBACK_S, wait_for_rig
from thermrig.flash.release import Release, image_to_flash
from thermrig.lab.acquired import HeldPlace, holding, note_firmware
from thermrig.lab.client import LabClient
from thermrig.lab.errors import LabError, PlaceTaken
from thermrig.lab.locks import LockRecord
from thermrig.lab.test_pc_ssh import ssh_argv, ssh_where
from thermrig.protocol.messages import RigInfo
from thermrig.testbed import LocalRig, open_testbed

UPLOAD_S = 600.0  # the longest an upload on the test PC may take
PICO_DEVICE = "auto"  # mpremote's first USB serial device on the test PC: the Pico plugged in there


@dataclass(frozen=True)
class Upload:
    """What goes to the test PC (a file, or a folder's contents), what runs there in the folder it lands
    in, and the version the rig must report after."""

    board: str
    source: Path
    commands: tuple[tuple[str, ...], ...]
    version: str
    keep: object = field(default=None, compare=False, repr=False)  # what holds a staged folder alive

    @property
    def whose(self) -> str:
        """Whose version the rig must report, for the error that names it."""
        return "this checkout's" if self.version == checkout_version() else "the image's"

    def script(self) -> str:
        """The shell command line run on the test PC, the tar stream on its stdin."""
        run = " && ".join(shlex.join(c) for c in self.commands)
        return (
            'd=$(mktemp -d "${TMPDIR:-/tmp}/thermrig-flash.XXXXXX") || exit 97; '
            'cd "$d" && tar -xf - || { echo "cannot unpack the image in $d" >&2; rm -rf "$d"; exit 97; }; '
            f'{run}; rc=$?; cd /; rm -rf "$d"; exit $rc'
        )

    def archive(self) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            if self.source.is_dir():
                for child in sorted(self.source.iterdir()):
                    tar.add(child, arcname=child.name)
            else:
                tar.add(self.source, arcname=self.source.name)
        return buf.getvalue()


def nucleo_upload(board: str, image: Path | None, version: str | None = None) -> Upload:
    if image is None:
        flasher = PlatformIOFlasher(board)
        version = flasher.build()
        image = flasher.image()
        if not image.exists():
            raise FlashError(f"build: {image} is missing after `pio run -e {board}`")
    assert version is not None
    return Upload(board, image, (tuple(openocd_command(board, image.name)),), version)


def pico_upload(image: Path | None, version: str | None = None) -> Upload:
    """version: a release's (its files already carry it); None stamps this checkout's."""
    flasher = PicoFlasher(image, version) if image is not None else PicoFlasher()
    version = flasher.build()  # stages the board's files (from `image`, a firmware/micropython copy)
    commands = (
        tuple(flasher.copy_command(PICO_DEVICE, "mpremote")),
        tuple(flasher.reset_command(PICO_DEVICE, "mpremote")),
    )
    return Upload("pico", flasher.staged, commands, version, keep=flasher)


LAB_BOARDS: dict[str, Callable[[Path | None, str | None], Upload]] = {
    **{board: (lambda image, version, b=board: nucleo_upload(b, image, version)) for board in OPENOCD_TARGETS},
    "pico": pico_upload,
}


def prepare(board: str, place: str, image: Path | None, release: Path | None = None) -> Upload:
    """The board's image built (or the one given, or the release's for the board) and how the test PC
    uploads it."""
    if not board:
        raise LabError(f"place {place} has no board tag: `thermrig lab export --board ...` sets it")
    if board not in LAB_BOARDS:
        raise LabError(f"place {place}: board {board} cannot be flashed from the lab (boards: {', '.join(LAB_BOARDS)})")
    if image is None and release is None:
        return LAB_BOARDS[board](None, None)
    if image is not None and image.is_dir() and Release.holding(image) is None:
        return LAB_BOARDS[board](image, None)  # a Pico firmware folder of a checkout: stamped here
    _, path, version = image_to_flash(board, image, release)
    return LAB_BOARDS[board](path, version)


def _last_words(text: str) -> str:
    return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")


def send(upload: Upload, held: HeldPlace, key: str = "") -> None:
    """Copy the image to the place's test PC and run the upload tool there; one line naming what failed."""
    if held.ssh is None:
        raise LabError(f"place {held.name}: no SSH in its resources (thermrig lab export --test-pc)")
    cmd = ssh_argv(held.ssh, upload.script(), key)
    try:
        done = subprocess.run(cmd, input=upload.archive(), capture_output=True, timeout=UPLOAD_S)
    except subprocess.TimeoutExpired as exc:
        raise FlashError(f"upload on test PC {held.ssh.host} (place {held.name}) took over {UPLOAD_S:.0f} s") from exc
    words = _last_words((done.stdout + done.stderr).decode(errors="replace"))
    if done.returncode == 255:  # ssh's own failure: the test PC did not let us in
        raise LabError(f"{ssh_where(held.ssh, held.name)}: {words or 'ssh failed'}")
    if done.returncode != 0:
        run = " && ".join(shlex.join(c) for c in upload.commands)
        raise FlashError(
            f"upload tool failed on test PC {held.ssh.host} (place {held.name}): `{run}` exited with status "
            f"{done.returncode}: {words}"
        )


def _safe(url: str) -> None:
    """Best effort: whatever runs on the rig now stops heating before its firmware is replaced."""
    with contextlib.suppress(Exception), open_testbed(LocalRig(url), keepalive=False, hello_timeout=0.5):
        pass  # SAFE on the way out


def flash_place(
    coordinator: str,
    place: str,
    image: Path | None = None,
    key: str = "",
    say: Callable[[str], None] = lambda text: None,
    timeout: float = COMEBACK_S,
    on_stale: Callable[[LockRecord], None] = lambda record: None,
    release: Path | None = None,
) -> tuple[HeldPlace, RigInfo]:
    """Build, acquire, upload on the test PC, check HELLO's version, release (also on error and Ctrl-C)."""
    with LabClient(coordinator) as client:
        view = client.place(place)  # NoSuchPlace names the places there are
    if view.acquired:  # said before building; acquiring refuses it again if someone takes it meanwhile
        raise PlaceTaken(f"place {place} at {coordinator} is held by {view.acquired}")
    board = view.tags.get("board", "")
    say(f"building the {board} firmware" if image is None and release is None else f"sending {image or release}")
    upload = prepare(board, place, image, release)
    with (
        LabClient(coordinator) as client,
        holding(client, "flash", places=[place], on_stale=on_stale, ssh_key=key) as (held,),
    ):
        _safe(held.serial_url)
        say(f"uploading {upload.version} on test PC {held.ssh.host if held.ssh else '-'} ({board})")
        send(upload, held, key)
        say(f"waiting for the rig on {held.serial_url}")
        try:
            info = wait_for_rig(held.serial_url, timeout)
        except FlashError as exc:
            raise FlashError(f"place {place}: {exc}") from exc
        note_firmware(client, place, info.version)  # what the rig runs now, right or wrong (`lab status`)
        if info.version != upload.version:
            raise FlashError(
                f"place {place}: version after upload is {info.version}, not {upload.version} ({upload.whose}); "
                "the rig is left in its safe state"
            )
        return held, info
