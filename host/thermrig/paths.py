"""Where thermrig's own files are: the package's data as the wheel installs it (thermrig/data: rigsim, rigsim6, the
nbdkit plugin, the MicroPython firmware's source, the hardware profiles, the example campaigns, the revision it was
built from), or, in the dev workflow (an editable install of a source checkout), the checkout's own copies.

The checkout is a dev tool only: an installed wheel has no checkout (checkout() is None) and finds everything in its
data. The user's folders and the tools' locations come from thermrig.settings."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_DATA = Path(str(files("thermrig"))) / "data"

# The package data's name -> where a checkout keeps it (make build writes build/host).
CHECKOUT_PLACES = {
    "bin/rigsim": "build/host/rigsim",
    "bin/rigsim6": "build/host/rigsim6",
    "bin/thermrig_drive.so": "build/host/thermrig_drive.so",
    "profiles": "hardware/profiles",
    "examples": "examples",
    "micropython": "firmware/micropython",
}


def checkout() -> Path | None:
    """The source checkout this package runs from (the dev workflow's editable install), or None for an
    installed package."""
    if (REPO_ROOT / "firmware" / "CMakeLists.txt").is_file() and (REPO_ROOT / "host" / "thermrig").is_dir():
        return REPO_ROOT
    return None


def packaged(name: str) -> Path:
    """A file or folder of the package's data (a key of CHECKOUT_PLACES, or "revision"): the installed
    copy, else the checkout's; the path may not exist (the caller says how to get it)."""
    installed = _DATA / name
    root = checkout()
    if installed.exists() or root is None or name not in CHECKOUT_PLACES:
        return installed
    return root / CHECKOUT_PLACES[name]


def build_revision() -> str | None:
    """The firmware stamp (version+grevision) the wheel was built from; None where no build wrote one."""
    try:
        return (_DATA / "revision").read_text().strip() or None
    except OSError:
        return None
