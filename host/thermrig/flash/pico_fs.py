"""The Pico's filesystem as a lab's flash leaves it, as a littlefs image at the rp2 port's filesystem
offset: the files `thermrig flash --board pico` stages (a release's .mpy files and main.py, or a
checkout's .py files), written by the same staging code (PicoFlasher.build). An emulated RP2040
(the `micropython-rp2040` simulated firmware) boots stock MicroPython with it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from thermrig.flash.pico import PicoFlasher
from thermrig.flash.release import MANIFEST, image_to_flash


@dataclass(frozen=True)
class PicoFlashLayout:
    """MicroPython v1.28 for RPI_PICO: littlefs v2 from flash offset 0xA0000 to the end of the 2 MiB flash
    (1408 KiB), 4096-byte blocks, 256-byte program and read units."""

    offset: int = 0xA0000
    block_size: int = 4096
    block_count: int = 352
    prog_size: int = 256
    read_size: int = 256


RPI_PICO = PicoFlashLayout()


def littlefs_image(staged: Path, out: Path, layout: PicoFlashLayout = RPI_PICO) -> Path:
    """Every file under `staged`, at the same path on a fresh littlefs, written to `out` (the image of the
    flash from `layout.offset` on)."""
    from littlefs import LittleFS  # the firmware extra: only the emulated Pico needs it

    fs = LittleFS(
        block_size=layout.block_size,
        block_count=layout.block_count,
        prog_size=layout.prog_size,
        read_size=layout.read_size,
    )
    for path in sorted(staged.rglob("*")):
        name = path.relative_to(staged).as_posix()
        if path.is_dir():
            fs.mkdir(name)
        else:
            with fs.open(name, "wb") as f:
                f.write(path.read_bytes())
    out.write_bytes(fs.context.buffer)
    return out


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
