"""Which firmware a rig runs, against this checkout: the version stamp the C builds write
(firmware/version.cmake: project version, git revision, -dirty), computed the same way here (for an
installed wheel: the stamp it was built with), and how a rig's HELLO `ver=` compares with it and with
this host."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from thermrig import __version__
from thermrig.paths import build_revision, checkout, packaged

_VERSION = re.compile(r"^(\d+(?:\.\d+)*)(?:\+g([0-9a-f]+))?(-dirty)?$")


@dataclass(frozen=True)
class FirmwareVersion:
    text: str
    release: tuple[int, ...]  # () when the text is not a thermrig stamp
    revision: str | None = None
    dirty: bool = False

    @classmethod
    def parse(cls, text: str) -> FirmwareVersion:
        m = _VERSION.match(text)
        if m is None:
            return cls(text, ())
        return cls(text, tuple(int(x) for x in m.group(1).split(".")), m.group(2), m.group(3) is not None)


def _project_version(root: Path) -> str:
    pyproject = root / "host" / "pyproject.toml"
    if pyproject.exists():
        m = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
        if m:
            return m.group(1)
    return __version__


def checkout_version(root: Path | None = None) -> str:
    """The stamp a firmware built from this checkout carries now (as firmware/version.cmake writes it);
    without a checkout (an installed wheel), the stamp of the build the wheel was made from."""
    root = root or checkout()
    if root is None:
        return build_revision() or __version__
    version = _project_version(root)
    git = ["git", "-C", str(root)]
    try:
        rev = subprocess.run([*git, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, check=True)
        status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return version  # not a git checkout: the release alone, as the build stamps it
    dirty = "-dirty" if status.stdout.strip() else ""
    return f"{version}+g{rev.stdout.strip()}{dirty}"


def host_version() -> str:
    """This package's version and the revision it comes from: the one the wheel was built at, or the
    checkout's now (the dev workflow), e.g. `0.1.0 (revision 1a2b3c4)`."""
    stamp = FirmwareVersion.parse(build_revision() or checkout_version())
    if stamp.revision is None:
        return f"{__version__} (revision unknown)"
    return f"{__version__} (revision {stamp.revision}{', with uncommitted changes' if stamp.dirty else ''})"


def checkout_verdict(reported: str, checkout: str) -> tuple[bool, str]:
    """(whether the rig runs this checkout's firmware, one line saying so)."""
    rig, here = FirmwareVersion.parse(reported), FirmwareVersion.parse(checkout)
    if rig.revision is not None and (rig.release, rig.revision) == (here.release, here.revision):
        if rig.dirty or here.dirty:
            return True, f"this checkout's revision, with uncommitted changes ({reported}); cannot tell which"
        return True, f"yes, this checkout's firmware ({reported})"
    return False, f"no: this checkout builds {checkout}; `thermrig flash` installs it"


def older_than_host(reported: str, host: str = __version__) -> str | None:
    """A warning when the rig's firmware is an older release than this host package, else None."""
    rig = FirmwareVersion.parse(reported)
    host_release = FirmwareVersion.parse(host).release
    if not rig.release:
        return f"the rig's firmware version {reported!r} is not a thermrig version stamp; flash this checkout's"
    if rig.release < host_release:
        return (
            f"the rig runs firmware {reported}, older than this host ({host}): it speaks the same protocol, "
            f"but fixes since then are missing; `thermrig flash` updates it"
        )
    return None


def micropython_firmware_dir() -> Path:
    """The MicroPython firmware's source folder: what is copied to a Pico (and run by the simulated rig)."""
    return packaged("micropython")


def stamp_micropython_version(board_dir: Path, version: str) -> None:
    """Write the version HELLO reports into a copy of the MicroPython firmware (thermrig_fw/version.py)."""
    (board_dir / "thermrig_fw" / "version.py").write_text(
        f'# Written from this checkout\'s version stamp when the firmware was copied.\nFW_VERSION = b"{version}"\n'
    )
