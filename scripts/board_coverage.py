"""make coverage's board part: line coverage of the Nucleo's HAL (firmware/zephyr/src/rig_hal.c) by the board
build's runs on native_sim_64, built with gcov (firmware/zephyr/boards/coverage.conf) into build/coverage-board/.

1. The board build: the conformance suite's checks on it (tests/conformance, zephyr-board).
2. The same with thermocouple 2's node disabled (tests/board/thermocouple_left_out.overlay): its transfers
   fail and it must read open.
3. The same with tach lines that cannot interrupt (tests/board/tach_without_interrupts.overlay): the HAL's
   start fails and the board must stay silent in its safe state.

Then gcovr over the three builds: rig_hal.c at least 90 % of its lines, the emulated board's own files shown.
Exit status 1 if a run does not behave as said or the coverage is short."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink, RigTimeout
from thermrig.protocol.messages import Fault
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "coverage-board"
COVERAGE_CONF = ROOT / "firmware" / "zephyr" / "boards" / "coverage.conf"
VARIANTS = {"full": None, "tc-left-out": "thermocouple_left_out", "tach-no-irq": "tach_without_interrupts"}
FAIL_UNDER = 90


def build(variant: str, overlay: str | None) -> Path:
    args = f"-DEXTRA_CONF_FILE={COVERAGE_CONF}"
    if overlay:
        args += f" -DEXTRA_DTC_OVERLAY_FILE={ROOT / 'tests' / 'board' / f'{overlay}.overlay'}"
    env = {**os.environ, "THERMRIG_ZEPHYR_OUT": str(OUT / variant), "THERMRIG_ZEPHYR_ARGS": args}
    subprocess.run(["bash", str(ROOT / "scripts" / "build_zephyr.sh"), "native_sim_64"], check=True, env=env)
    for stale in (OUT / variant).rglob("*.gcda"):
        stale.unlink()
    return OUT / variant / "native_sim_64" / "zephyr" / "zephyr.exe"


def run_full(image: Path) -> None:
    env = {
        **os.environ,
        "THERMRIG_ZEPHYR_BOARD": str(image),
        "THERMRIG_RIGSIM": str(ROOT / "build" / "host" / "rigsim"),
    }
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "tests" / "conformance"), "-q", "-p", "no:cacheprovider"]
    subprocess.run([*cmd, "-k", "zephyr-board"], check=True, env=env, cwd=ROOT)


def run_tc_left_out(image: Path) -> None:
    cfg = SimConfig(pacing=Pacing.stepped(), seed=3, firmware="zephyr-board", image=image)
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        link.hello()
        sim.advance(0.5)
        frame = link.collect_telemetry(1, timeout=2.0)[-1]
        if Fault.TC_OPEN not in frame.faults or frame.named("heatsink").ok:
            sys.exit(
                f"board coverage: with tc2 left out the rig shows {frame.faults!r}, heatsink {frame.named('heatsink')}"
            )
    print("board coverage: thermocouple 2 left out of the overlay reads open, TC_OPEN latched")


def run_tach_no_irq(image: Path) -> None:
    # Real time: a stepped rig waits for the firmware's first request, which this board never makes.
    cfg = SimConfig(pacing=Pacing.realtime(), seed=3, firmware="zephyr-board", image=image)
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        try:
            link.hello()
        except RigTimeout:
            print("board coverage: tach lines without edge interrupts: the board stays silent in its safe state")
            return
    sys.exit("board coverage: a board whose tach counters cannot start answered HELLO")


def main() -> None:
    images = {variant: build(variant, overlay) for variant, overlay in VARIANTS.items()}
    run_full(images["full"])
    run_tc_left_out(images["tc-left-out"])
    run_tach_no_irq(images["tach-no-irq"])
    dirs = [str(OUT / v / "native_sim_64") for v in VARIANTS]
    gcovr = ["gcovr", "--root", str(ROOT), "--print-summary", *dirs]
    subprocess.run([*gcovr, "--filter", "firmware/zephyr/native/", "--txt", str(OUT / "native.txt")], check=True)
    subprocess.run(
        [
            *gcovr,
            "--filter",
            "firmware/zephyr/src/rig_hal.c",
            "--fail-under-line",
            str(FAIL_UNDER),
            "--txt",
            str(OUT / "coverage.txt"),
        ],
        check=True,
    )
    print((OUT / "native.txt").read_text() + (OUT / "coverage.txt").read_text())


if __name__ == "__main__":
    main()
