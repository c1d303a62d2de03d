"""A miswired rig on the board build (the Nucleo's HAL on native_sim_64): built with tests/board/miswired.overlay
(thermocouples 0 and 1 with their chip selects exchanged, the SHT3x addressed where it does not answer, each
fan's tach read on the other fan's line), `thermrig rig bringup` and `thermrig rig selftest` name each fault.
The emulated buses answer by the rig's true wiring, not the overlay, so the miswiring is the overlay's alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from zephyr_boards import REPO

MISWIRED = REPO / "tests" / "board" / "miswired.overlay"
VARIANT = REPO / "build" / "zephyr-variants" / "miswired"

# One build, one worker; the build (about a minute on a busy machine) counts against the first test's timeout.
pytestmark = [pytest.mark.xdist_group("board-miswired"), pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def miswired_image() -> Path:
    env = {
        **os.environ,
        "THERMRIG_ZEPHYR_OUT": str(VARIANT),
        "THERMRIG_ZEPHYR_ARGS": f"-DEXTRA_DTC_OVERLAY_FILE={MISWIRED}",
    }
    res = subprocess.run(
        ["bash", "scripts/build_zephyr.sh", "native_sim_64"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return VARIANT / "native_sim_64" / "zephyr" / "zephyr.exe"


def thermrig(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thermrig.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "COLUMNS": "400"},
    )


def test_bringup_names_each_miswiring(miswired_image: Path, isolated_env: dict[str, str]) -> None:
    res = thermrig(
        isolated_env, "rig", "bringup", "--sim", "--firmware", "zephyr-board", "--image", str(miswired_image)
    )
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout
    assert "FAIL  touch drive_ctrl" in out and "the chip selects of tc0 and tc1 are swapped" in out, out
    assert "FAIL  ambient sensor" in out and "the SHT31 does not answer" in out and "address 0x44" in out, out
    for fan in ("fan0", "fan1"):
        assert f"{fan}'s speed follows another fan: its PWM and tach wires are from different fans" in out, out
    assert "PASS  touch heatsink" in out and "PASS  touch chassis_air" in out, out
    # The room step holds the beads to each other when the ambient sensor is silent; the heater pulse passes.
    assert (
        out.splitlines()[-1]
        == "4 of 9 steps passed; failed: ambient sensor, touch drive_ctrl, touch drive_nand, fan0, fan1"
    )


def test_selftest_names_each_miswiring(miswired_image: Path, isolated_env: dict[str, str], tmp_path: Path) -> None:
    report = tmp_path / "selftest.json"
    image = str(miswired_image)
    args = ["--sim", "--firmware", "zephyr-board", "--image", image, "--only", "wiring", "--json", str(report)]
    res = thermrig(isolated_env, "rig", "selftest", *args)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL wiring" in res.stdout
    (result,) = json.loads(report.read_text())
    detail = result["detail"]
    assert result["name"] == "wiring" and result["outcome"] == "failed"
    assert "the ambient sensor does not answer: check its I2C address (0x44)" in detail
    assert "the drive_ctrl bead (tc0) raised drive_nand (tc1): chip selects swapped?" in detail
    assert "the drive_nand bead (tc1) raised drive_ctrl (tc0): chip selects swapped?" in detail
    assert "fan0's PWM and tach are from different fans" in detail and "fan1's PWM and tach" in detail
    assert "heatsink bead" not in detail and "chassis_air bead" not in detail


def test_a_board_image_that_is_missing_or_not_a_program_is_one_clear_line(
    isolated_env: dict[str, str], tmp_path: Path
) -> None:
    missing = thermrig(
        {**isolated_env, "THERMRIG_ZEPHYR_BOARD": "/nonexistent/zephyr.exe"}, "sim", "--firmware", "zephyr-board"
    )
    text = tmp_path / "zephyr.exe"
    text.write_text("not a program\n")
    wrong = thermrig(isolated_env, "rig", "selftest", "--sim", "--firmware", "zephyr-board", "--image", str(text))
    for r, words in ((missing, ("is missing", "make firmware-board")), (wrong, ("is not a native_sim program",))):
        assert r.returncode == 1, r.stdout + r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
        assert all(word in r.stderr for word in words), r.stderr
