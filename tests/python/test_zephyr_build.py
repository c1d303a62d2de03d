"""The real Zephyr builds of `make firmware`: clean configure and build, clear errors on bad input."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from skips import machine_cannot
from zephyr_boards import REPO, TOOLCHAINS, archives_dir, board_build, firmware_boards

# What a clean Zephyr 3.5 configure prints besides CMake's "-- " status lines: Kconfig's progress.
KCONFIG_PROGRESS = re.compile(
    r"(Loading Zephyr default modules|Parsing |Loaded configuration|Merged configuration|"
    r"No change to (configuration|Kconfig header)|Configuration saved to|Kconfig header saved to)"
)


def run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def test_the_supported_boards_are_built() -> None:
    assert {"nucleo_f411re", "nucleo_f446re"} <= set(firmware_boards())


@pytest.mark.parametrize("board", firmware_boards())
def test_configure_and_build_print_no_warning(board: str) -> None:
    out = board_build(board)
    configure = (out / "configure.log").read_text().splitlines()
    noise = [line for line in configure if line.strip() and not line.startswith("-- ")]
    assert [line for line in noise if not KCONFIG_PROGRESS.match(line)] == []
    assert f"-- Board: {board}" in configure
    build = (out / "build.log").read_text()
    assert not re.search(r"(?i)warning", build), build
    # The app's own files are compiled with -Werror (zephyr/CMakeLists.txt).
    commands = {c["file"]: c["command"] for c in json.loads((out / "compile_commands.json").read_text())}
    app = [cmd for file, cmd in commands.items() if "/firmware/" in file]
    assert len(app) >= 3 and all("-Werror" in cmd for cmd in app)


def test_unknown_board_is_one_clear_line() -> None:
    res = run(["bash", "scripts/build_zephyr.sh", "nucleo_nope"])
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "unknown board 'nucleo_nope'" in lines[0] and "nucleo_f411re" in lines[0]


def test_corrupt_archive_is_named_before_anything_is_built(tmp_path: Path) -> None:
    src = archives_dir()
    if not (src / "SHA256SUMS").exists():
        machine_cannot(f"no pinned archives at {src} (a machine that builds with PlatformIO or west)")
    copy = tmp_path / "toolchains"
    shutil.copytree(src, copy)
    archive = copy / "zephyr-3.5.0-min.tar.xz"
    archive.chmod(0o644)
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0x01
    archive.write_bytes(bytes(data))
    res = run(["bash", "scripts/build_zephyr.sh", "nucleo_f411re"], THERMRIG_TOOLCHAINS=str(copy))
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        f"setup: an archive in {copy} is missing or does not match its SHA256SUMS (corrupt or replaced): "
        "copy the archives again."
    ]


def test_missing_archives_say_where_to_put_them(tmp_path: Path) -> None:
    # A checkout with nothing unpacked yet: the setup script copied into an empty project folder.
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup_toolchains.sh", tmp_path / "scripts")
    res = run(["bash", str(tmp_path / "scripts" / "setup_toolchains.sh")], THERMRIG_TOOLCHAINS=str(tmp_path / "none"))
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"not at {tmp_path / 'none'}: set THERMRIG_TOOLCHAINS" in lines[0] and "PlatformIO or west" in lines[0]
    assert not (tmp_path / "build").exists()


def platformio_core_from_archives(core: Path) -> Path:
    """A PlatformIO core dir holding framework-zephyr as PlatformIO installs it (the Zephyr tree at the
    package's root, package.json, the west projects install-deps.py clones under _pio/), made from the
    unpacked archives with hard links: what a machine with internet access has after PlatformIO fetched it."""
    if not TOOLCHAINS.exists():
        machine_cannot(f"no unpacked archives at {TOOLCHAINS} to make a PlatformIO package tree from")
    fw = core / "packages" / "framework-zephyr"
    fw.parent.mkdir(parents=True)
    subprocess.run(["cp", "-al", str(TOOLCHAINS / "zephyr"), str(fw)], check=True)
    (fw / "package.json").write_text('{"name": "framework-zephyr", "version": "2.30500.231204"}\n')
    for module in ("stm32", "cmsis"):
        dest = fw / "_pio" / "modules" / "hal" / module
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(TOOLCHAINS / "modules" / "hal" / module), str(dest)], check=True)
    return fw


def section_sizes(elf: Path) -> dict[str, int]:
    from elftools.elf.elffile import ELFFile

    with elf.open("rb") as f:
        return {s.name: s["sh_size"] for s in ELFFile(f).iter_sections() if s["sh_flags"] & 0x2}  # SHF_ALLOC


def test_the_cmake_build_takes_platformios_zephyr_when_there_are_no_archives(tmp_path: Path) -> None:
    fw = platformio_core_from_archives(tmp_path / "core")
    res = run(
        ["bash", "scripts/build_zephyr.sh", "qemu_cortex_m3"],
        THERMRIG_ZEPHYR_SOURCE="platformio",
        PLATFORMIO_CORE_DIR=str(tmp_path / "core"),
        THERMRIG_ZEPHYR_OUT=str(tmp_path / "out"),
    )
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out" / "qemu_cortex_m3"
    assert (out / "zephyr-tree").read_text().strip() == str(fw)
    assert f"ZEPHYR_BASE={fw}" in (out / "CMakeCache.txt").read_text().replace(":PATH", "")
    # The same sources from either tree: the same image, section for section (rodata holds the trees'
    # paths in assertion messages, so only its size may differ, by their lengths).
    ours, theirs = (section_sizes(b / "zephyr" / "zephyr.elf") for b in (out, board_build("qemu_cortex_m3")))
    assert ours.keys() == theirs.keys()
    assert {k: v for k, v in ours.items() if k != "rodata"} == {k: v for k, v in theirs.items() if k != "rodata"}
    assert abs(ours["rodata"] - theirs["rodata"]) <= 4 * abs(len(str(fw)) - len(str(TOOLCHAINS / "zephyr"))) + 8


def test_no_archives_and_no_platformio_is_one_line_saying_how_to_get_them(tmp_path: Path) -> None:
    # A fresh checkout offline: no archives, nothing unpacked, no framework-zephyr, PlatformIO not reachable
    # (no venv to run it from here, so the fetch fails at once).
    (tmp_path / "scripts").mkdir()
    for script in ("zephyr_tree.sh", "setup_toolchains.sh"):
        shutil.copy(REPO / "scripts" / script, tmp_path / "scripts")
    res = run(
        ["bash", str(tmp_path / "scripts" / "zephyr_tree.sh")],
        THERMRIG_TOOLCHAINS=str(tmp_path / "none"),
        PLATFORMIO_CORE_DIR=str(tmp_path / "core"),
    )
    assert res.returncode == 1 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"no pinned archives at {tmp_path / 'none'}" in lines[0]
    assert "framework-zephyr 2.30500.231204" in lines[0] and "internet access" in lines[0]
    assert not (tmp_path / "build").exists()
