"""A miswired rig on the board build (the Nucleo's HAL on native_sim_64): built with tests/board/miswired.overlay
(thermocouples 0 and 1 with their chip selects exchanged, the SHT3x addressed where it does not answer, each
fan's tach read on the other fan's line), `thermrig rig bringup` and `thermrig rig selftest` name each fault.
The emulated buses answer by the rig's true wiring, not the overlay, so the miswiring is the overlay's alone.

Then one overlay per check of the board build's emulators that the first does not reach (tests/board/*.overlay,
each a build of its own): a chip select's polarity, the SPI mode, the bit order and the clock of the
thermocouples, the I2C bus's clock, each PWM's polarity, channel (exchanged, on a timer output wired to nothing,
or on a timer that cannot hold its period) and frequency (what the fan takes, and what the fans' 16-bit timer
can hold). Bring-up and selftest name each for what it is, and neither blames a part for the consequence of
another part's fault: a step a latched fault stops is not run, and says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from zephyr_boards import REPO

MISWIRED = REPO / "tests" / "board" / "miswired.overlay"
VARIANT = REPO / "build" / "zephyr-variants" / "miswired"

# One build, one worker; the build (about a minute on a busy machine) counts against the first test's timeout.
pytestmark = [pytest.mark.xdist_group("board-miswired"), pytest.mark.timeout(600)]


def build_variant(overlay: Path, out: Path) -> Path:
    env = {
        **os.environ,
        "THERMRIG_ZEPHYR_OUT": str(out),
        "THERMRIG_ZEPHYR_ARGS": f"-DEXTRA_DTC_OVERLAY_FILE={overlay}",
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
    return out / "native_sim_64" / "zephyr" / "zephyr.exe"


@pytest.fixture(scope="module")
def miswired_image() -> Path:
    return build_variant(MISWIRED, VARIANT)


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
        == "5 of 10 steps passed; failed: ambient sensor, touch drive_ctrl, touch drive_nand, fan0, fan1"
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
    assert "the SHT31 does not answer: check SDA/SCL, its 3.3 V, address 0x44" in detail
    assert "the drive_ctrl bead raised drive_nand (tc1): the chip selects of tc0 and tc1 are swapped" in detail
    assert "the drive_nand bead raised drive_ctrl (tc0): the chip selects of tc1 and tc0 are swapped" in detail
    assert "fan0's speed follows another fan: its PWM and tach wires are from different fans" in detail
    assert "fan1's speed follows another fan: its PWM and tach wires" in detail
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


@dataclass(frozen=True)
class Miswiring:
    """One overlay over the board build, the emulator check it trips, and what each command must say."""

    overlay: str
    bringup: tuple[str, ...]  # lines of `rig bringup`'s output that must be there
    last: str  # its summary line
    selftest: tuple[str, ...]  # in the wiring check's detail
    never: tuple[str, ...] = ()  # blame of a part that is wired right, in neither output


NOT_THE_FANS = ("does not follow its duty", "does not follow fan0's duty", "does not follow fan1's duty")

MISWIRINGS = [
    Miswiring(
        "tc2_cs_active_high",
        (
            "tc2 (heatsink) reads 0.0 °C, open, while drive_ctrl, drive_nand, chassis_air read room temperature:"
            " check tc2's chip select (its wire, and its polarity: active low)",
            "SKIP  touch heatsink       not run: tc2 does not read (room temperature step)",
            "SKIP  fan0                 not run: TC_OPEN latched",
        ),
        "5 of 10 steps passed; failed: room temperature; not run: touch heatsink, fan0, fan1, heater pulse",
        (
            "tc2 (heatsink) reads 0.0 °C, open, while drive_ctrl, drive_nand, chassis_air read room temperature:"
            " check tc2's chip select (its wire, and its polarity: active low)",
            "the fans not judged: TC_OPEN latched holds them at full",
        ),
        NOT_THE_FANS,
    ),
    Miswiring(
        "tc1_spi_mode1",
        (
            "tc1 (drive_nand) reads 0.0 °C, open, while drive_ctrl, heatsink, chassis_air read room temperature",
            "its SPI mode (0)",
        ),
        "5 of 10 steps passed; failed: room temperature; not run: touch drive_nand, fan0, fan1, heater pulse",
        ("tc1 (drive_nand) reads 0.0 °C, open", "its SPI mode (0)"),
        NOT_THE_FANS,
    ),
    Miswiring(
        "tc_clock_20mhz",
        ("unstable readings with the rig cold", "check the SPI clock of those chips (the MAX31855 takes up to 5 MHz"),
        "1 of 10 steps passed; failed: room temperature; not run: heater off, touch drive_ctrl, touch drive_nand,"
        " touch heatsink, touch chassis_air, fan0, fan1, heater pulse",
        ("unstable readings with the rig cold", "check the SPI clock of those chips (the MAX31855 takes up to 5 MHz"),
        (*NOT_THE_FANS, "chip selects of"),
    ),
    Miswiring(
        "heater_pwm_inverted",
        ("FAIL  heater off", "the heater heats at 0 %: its PWM is inverted"),
        "0 of 10 steps passed; failed: heater off; not run: room temperature, ambient sensor, touch drive_ctrl,"
        " touch drive_nand, touch heatsink, touch chassis_air, fan0, fan1, heater pulse",
        ("the heater heats at 0 %", "its PWM is inverted"),
        (*NOT_THE_FANS, "chip selects"),
    ),
    Miswiring(
        "i2c_3mhz",
        ("FAIL  ambient sensor", "the bus clock (it takes up to 1 MHz)"),
        "9 of 10 steps passed; failed: ambient sensor",
        ("the SHT31 does not answer", "the bus clock (it takes up to 1 MHz)"),
    ),
    Miswiring(
        "fan0_pwm_5khz",
        ("FAIL  fan0", "fan0 does not follow its duty", "the PWM's frequency (a 4-wire fan takes 21-28 kHz"),
        "9 of 10 steps passed; failed: fan0",
        ("fan0 does not follow its duty", "the PWM's frequency (a 4-wire fan takes 21-28 kHz"),
        ("fan1 does not follow", "rpm1 does not follow"),
    ),
    Miswiring(
        "tc3_lsb_first",
        ("tc3 (chassis_air) reads -2047.8 °C, no temperature at all, steadily", "the bit order (MSB first)"),
        "4 of 10 steps passed; failed: room temperature; not run: heater off, touch chassis_air, fan0, fan1,"
        " heater pulse",
        ("tc3 (chassis_air) reads", "no temperature at all, steadily", "the bit order (MSB first)"),
        (*NOT_THE_FANS, "chip selects of"),
    ),
    Miswiring(
        "fan0_pwm_1khz",
        ("FAIL  PWM outputs", "the PWM driver refuses an output's duty", "1465 Hz at the least"),
        "7 of 11 steps passed; failed: PWM outputs; not run: fan0, fan1, heater pulse",
        ("OUTPUT_ERROR latched: the PWM driver refuses an output's duty", "1465 Hz at the least"),
        NOT_THE_FANS,
    ),
    Miswiring(
        "fan1_pwm_inverted",
        ("FAIL  fan1", "fan1 stands still at full duty: its PWM is inverted", "SKIP  fan0"),
        "7 of 10 steps passed; failed: fan1; not run: fan0, heater pulse",
        ("fan1 0 rpm at 100 %: FAN_STALL latched: fan1 stands still at full duty: its PWM is inverted",),
        ("fan0 does not follow", "fan0 stands still", "rpm0 does not follow"),
    ),
    Miswiring(
        "heater_pwm_25khz",
        ("FAIL  heater pulse", "a frequency the switch follows: 1 kHz at most"),
        "9 of 10 steps passed; failed: heater pulse",
        ("the heater does not heat", "a frequency the switch follows: 1 kHz at most"),
        (*NOT_THE_FANS, "chip selects"),
    ),
    Miswiring(
        "heater_pwm_channel",
        (
            "PASS  heater off",
            "FAIL  heater pulse         nothing rose 1 °C in 40 s of heat",
            "the heater does not heat: its PWM may reach no heater: check the heater's PWM channel",
        ),
        "9 of 10 steps passed; failed: heater pulse",
        ("the heater does not heat", "its PWM may reach no heater: check the heater's PWM channel"),
        (*NOT_THE_FANS, "chip selects", "the heater heats at 0 %"),
    ),
    Miswiring(
        "heater_pwm_on_fan0",
        (
            "FAIL  PWM outputs",
            "check each PWM's channel and frequency in the board's overlay against its timer (the heater's 1 kHz"
            " needs the 32-bit TIM2",
            "SKIP  heater pulse         not run: OUTPUT_ERROR latched",
        ),
        "7 of 11 steps passed; failed: PWM outputs; not run: fan0, fan1, heater pulse",
        ("OUTPUT_ERROR latched: the PWM driver refuses an output's duty", "the heater's 1 kHz needs the 32-bit TIM2"),
        (*NOT_THE_FANS, "the heater does not heat"),
    ),
    Miswiring(
        "fan0_pwm_channel",
        (
            "FAIL  fan0                 fan0 3000 rpm at 40 %, 3000 rpm at 100 %",
            "fan0 does not follow its duty: its PWM reaches no fan or comes at a frequency the fan ignores: check"
            " fan0's PWM channel and its wire",
            "PASS  fan1",
            "PASS  heater pulse",
        ),
        "9 of 10 steps passed; failed: fan0",
        (
            "fan0 3000 rpm at 40 %, 3000 rpm at 100 % (the other fans the other way): fan0 does not follow its duty:"
            " its PWM reaches no fan",
            "check fan0's PWM channel",
        ),
        ("fan1 does not follow", "rpm1 does not follow", "from different fans"),
    ),
    Miswiring(
        "fan_pwm_channels_swapped",
        ("fan0's speed follows another fan", "fan1's speed follows another fan"),
        "8 of 10 steps passed; failed: fan0, fan1",
        (
            "fan0's speed follows another fan: its PWM and tach wires are from different fans",
            "fan1's speed follows another fan: its PWM and tach wires are from different fans",
        ),
    ),
]


@pytest.fixture(scope="module")
def variants() -> Callable[[str], Path]:
    built: dict[str, Path] = {}

    def image(name: str) -> Path:
        if name not in built:
            built[name] = build_variant(REPO / "tests" / "board" / f"{name}.overlay", VARIANT.parent / name)
        return built[name]

    return image


@pytest.mark.parametrize("case", MISWIRINGS, ids=[m.overlay for m in MISWIRINGS])
def test_each_emulator_check_has_a_miswiring_named_for_what_it_is(
    case: Miswiring, variants: Callable[[str], Path], isolated_env: dict[str, str], tmp_path: Path
) -> None:
    image = str(variants(case.overlay))
    res = thermrig(isolated_env, "rig", "bringup", "--sim", "--firmware", "zephyr-board", "--image", image)
    out = " ".join(res.stdout.split())  # the console wraps long lines: compare with single spaces
    assert res.returncode == 1, res.stdout + res.stderr
    for said in case.bringup:
        assert " ".join(said.split()) in out, res.stdout
    assert res.stdout.splitlines()[-1] == case.last, res.stdout
    report = tmp_path / "selftest.json"
    args = ["--sim", "--firmware", "zephyr-board", "--image", image, "--only", "wiring", "--json", str(report)]
    res = thermrig(isolated_env, "rig", "selftest", *args)
    assert res.returncode == 1, res.stdout + res.stderr
    (result,) = json.loads(report.read_text())
    assert result["outcome"] == "failed", result
    for said in case.selftest:
        assert said in result["detail"], result["detail"]
    for blame in case.never:
        assert blame not in out and blame not in result["detail"], (out, result["detail"])
