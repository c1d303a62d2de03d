"""The Pico's filesystem as a lab's flash leaves it, as a littlefs image (thermrig.pico_files): the files
`thermrig flash --board pico` stages (a release's .mpy files and main.py, checked against its manifest, or
a checkout's .py files), staged by PicoFlasher.build itself. The `micropython-rp2040` simulated firmware
boots stock MicroPython on an emulated RP2040 with such an image (`--image` / SimConfig.image)."""

from __future__ import annotations

from pathlib import Path

from thermrig.flash.pico import PicoFlasher
from thermrig.flash.release import MANIFEST, image_to_flash
from thermrig.pico_files import littlefs_image


def staged_files(source: Path | None) -> tuple[PicoFlasher, str]:
    """What `thermrig flash --board pico` would copy: a release's files (a folder with a manifest, checked
    against it), or a firmware folder's (None: this checkout's firmware/micropython) stamped with this
    checkout's version; the flasher holds them in its staged folder until it is dropped. Returns the flasher
    and the version HELLO will report."""
    if source is not None and (source / MANIFEST).is_file():
        _, files, version = image_to_flash("pico", None, source)
        flasher = PicoFlasher(files, version)
    else:
        flasher = PicoFlasher(source)
    return flasher, flasher.build()


def board_filesystem(out: Path, source: Path | None = None) -> str:
    """The littlefs image of the Pico's files, flashed from `source` (a release, a firmware folder, or None:
    this checkout's .py files); returns the version the firmware will report."""
    flasher, version = staged_files(source)
    littlefs_image(flasher.staged, out)
    return version
