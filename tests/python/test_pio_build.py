"""PlatformIO builds what users flash (`make pio`): the pinned platform, an environment per Nucleo board,
and an image whose sections match the CMake build's (`make firmware`) within 1 %."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest
from zephyr_boards import REPO, board_build

from thermrig.firmware_identity import FirmwareVersion, checkout_version
from thermrig.flash.flasher import image_version

sys.path.insert(0, str(REPO / "scripts"))
from report_size import sections  # the same section reader `make size` uses

INI = configparser.ConfigParser()
INI.read(REPO / "platformio.ini")
ENVS = sorted(name.removeprefix("env:") for name in INI.sections() if name.startswith("env:"))


def test_platformio_ini_pins_the_tested_platform_for_each_nucleo() -> None:
    assert INI["env"]["platform"] == "ststm32@17.2.0"
    assert INI["env"]["framework"] == "zephyr"
    assert {"nucleo_f411re", "nucleo_f446re"} <= set(ENVS)
    assert all(INI[f"env:{env}"]["board"] == env for env in ENVS)


@pytest.mark.parametrize("env", ENVS)
def test_pio_image_matches_the_cmake_build(env: str) -> None:
    pio_elf = REPO / "build" / "pio" / env / "firmware.elf"
    assert pio_elf.exists(), f"{pio_elf} is missing: run `make pio` (make test does)"
    cmake = {s.name: s.size for s in sections(str(board_build(env) / "zephyr" / "zephyr.elf")) if "ALLOC" in s.flags}
    pio = {s.name: s.size for s in sections(str(pio_elf)) if "ALLOC" in s.flags}
    assert set(pio) == set(cmake)
    off = {name: (cmake[name], pio[name]) for name in cmake if abs(pio[name] - cmake[name]) > 0.01 * cmake[name]}
    assert off == {}
    # The core is in it: PlatformIO compiles src_dir itself, not the CMake app's sources.
    symbols = subprocess.run(["arm-none-eabi-nm", str(pio_elf)], capture_output=True, text=True, check=True).stdout
    assert {"rig_init", "rig_step", "rig_rx"} <= {line.split()[-1] for line in symbols.splitlines()}


@pytest.mark.parametrize("env", ENVS)
def test_pio_image_carries_a_full_version_stamp(env: str) -> None:
    """Release and git revision, as the CMake build stamps them (PlatformIO runs CMake with a PATH of its own
    tools, no git, and only when CMakeLists.txt changes: its images said the bare release until
    scripts/pio_version_stamp.py stamped every build). Read from the image, as `thermrig flash` reads what
    HELLO must say after the upload; the revision is one of this repository's (the build may predate HEAD)."""
    pio_elf = REPO / "build" / "pio" / env / "firmware.elf"
    assert pio_elf.exists(), f"{pio_elf} is missing: run `make pio` (make test does)"
    stamp = image_version(pio_elf)
    assert stamp is not None, f"{pio_elf} carries no version stamp"
    parsed = FirmwareVersion.parse(stamp)
    assert parsed.release == FirmwareVersion.parse(checkout_version()).release and parsed.revision, stamp
    git = ["git", "-C", str(REPO), "cat-file", "-e", f"{parsed.revision}^{{commit}}"]
    assert subprocess.run(git, capture_output=True).returncode == 0, f"{stamp}: no such revision here"


def test_unknown_environment_is_one_clear_line() -> None:
    res = subprocess.run(
        ["bash", "scripts/build_pio.sh", "nucleo_nope"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "unknown environment 'nucleo_nope'" in lines[0] and "nucleo_f411re" in lines[0]


def test_pio_build_leaves_home_alone(tmp_path: Path) -> None:
    # An up-to-date build (make pio ran): PlatformIO's state, packages and caches stay in build/.
    assert (REPO / "build" / "pio" / "nucleo_f411re" / "firmware.elf").exists(), "run `make pio` (make test does)"
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLATFORMIO_", "XDG_"))}
    res = subprocess.run(
        ["bash", "scripts/build_pio.sh", "nucleo_f411re"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=170,
        env={**env, "HOME": str(home)},
    )
    assert res.returncode == 0, res.stderr
    assert list(home.iterdir()) == []
