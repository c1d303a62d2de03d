"""Stock MicroPython on the emulated RP2040 (micropython-rp2040) heating under its host for
BENCH_RP2040_HEAP_S simulated seconds (default an hour), stepped, a PING every second: the free heap after
the firmware's own collections at the start and the end and its trend, the largest free block (the heap's
allocation table read from the chip's SRAM), the longest garbage collection and the longest tick against the
100 ms tick (the firmware's MEM reply, timed by the chip's clock), and the wall time."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from common import figure

from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.protocol.heap_report import HeapReport
from thermrig.settings import find_tool
from thermrig.sim.firmware.base import SimError
from thermrig.sim.firmware.rp2040_heap import HeapMap
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

HEAT_S = int(os.environ.get("BENCH_RP2040_HEAP_S", "3600"))  # simulated seconds of heating
EVERY_S = int(os.environ.get("BENCH_RP2040_HEAP_EVERY_S", str(max(10, HEAT_S // 12))))  # between samples
SETTLE_S = 12  # s: boot, then the firmware's first collection (its 100th tick)
TICK_MS = 100.0


@dataclass(frozen=True)
class Sample:
    sim_s: float
    wall_s: float
    report: HeapReport  # the firmware's MEM reply
    heap: HeapMap  # its allocation table, read from the SRAM right after

    def line(self) -> str:
        r, h = self.report, self.heap
        return (
            f"  {self.sim_s:6.0f} s ({self.wall_s:5.0f} s wall): free after GC {r.free_after_gc:,} B, "
            f"now {r.free:,} B (table {h.free:,} B); largest free block {h.largest_free:,} B "
            f"in {h.free_runs} free runs; {r.collections} GCs, last {r.gc_last_us / 1000:.1f} ms, "
            f"max {r.gc_max_us / 1000:.1f} ms; tick max {r.tick_max_us / 1000:.1f} ms"
        )


def sample(sim: SimulatedRig, link: RigLink, sim_s: float, wall0: float) -> Sample:
    report = link.heap_report()
    heap = sim.firmware.heap()  # type: ignore[attr-defined]
    return Sample(sim_s, time.monotonic() - wall0, report, heap)


def slope_per_hour(samples: list[Sample]) -> float:
    """Least-squares slope of the free heap after GC, in bytes per simulated hour."""
    xs = [s.sim_s / 3600 for s in samples]
    ys = [float(s.report.free_after_gc) for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def run() -> tuple[list[Sample], float, dict[str, float]]:
    cfg = SimConfig(pacing=Pacing.stepped(), seed=3, firmware="micropython-rp2040")
    with SimulatedRig(cfg) as sim, RigLink(sim.port) as link:
        link.hello()
        link.set(air=4500, heat=1, fan0=300)
        for _ in range(SETTLE_S):
            link.ping()
            sim.advance(1.0)
        wall0 = time.monotonic()
        samples = [sample(sim, link, 0.0, wall0)]
        print(samples[0].line(), flush=True)
        link.drain_telemetry()
        frames, last = 0, None
        for s in range(1, HEAT_S + 1):
            link.ping()
            sim.advance(1.0)
            got = link.drain_telemetry()
            frames += len(got)
            last = got[-1] if got else last
            if s % EVERY_S == 0 or s == HEAT_S:
                samples.append(sample(sim, link, float(s), wall0))
                print(samples[-1].line(), flush=True)
        wall = time.monotonic() - wall0
        pace = sim.firmware.pace()  # type: ignore[attr-defined]
        pace["frames"] = frames
        pace["air_c"] = last.named("chassis_air").value if last else float("nan")
        pace["faults"] = int(last.faults) if last else -1
    return samples, wall, pace


def main() -> int:
    if not find_tool("pico-uf2").is_file():
        print(f"  skipped: no {find_tool('pico-uf2')}: run make firmware-pico")
        return 0
    print(f"  heating {HEAT_S} simulated s (air target 45 °C), stepped; a sample every {EVERY_S} s:", flush=True)
    try:
        samples, wall, pace = run()
    except SimError as exc:
        print(f"  skipped: {exc}")
        return 0
    first, last = samples[0].report, samples[-1].report
    heap = first.free + first.used
    figure("MicroPython heap (gc.mem_free + gc.mem_alloc)", f"{heap:,} B", "RP2040: 264 KiB of SRAM")
    figure("free after the firmware's collection, start / end", f"{first.free_after_gc:,} / {last.free_after_gc:,} B")
    figure("  trend (least squares over the samples)", f"{slope_per_hour(samples):+,.0f} B/h", "0: no leak")
    lows = [s.report.free_after_gc for s in samples]
    figure("  lowest / highest of the samples", f"{min(lows):,} / {max(lows):,} B")
    figure("largest free block, start / end", f"{samples[0].heap.largest_free:,} / {samples[-1].heap.largest_free:,} B")
    figure("  smallest seen", f"{min(s.heap.largest_free for s in samples):,} B")
    figure("  free runs in the table, start / end", f"{samples[0].heap.free_runs} / {samples[-1].heap.free_runs}")
    figure("collections at the tick's fixed point (every 10 s)", f"{last.collections}")
    figure("longest collection", f"{last.gc_max_us / 1000:.1f} ms", f"of the {TICK_MS:.0f} ms tick")
    figure("  the last one", f"{last.gc_last_us / 1000:.1f} ms")
    figure(
        "longest tick (sample to end of work, GC included)", f"{last.tick_max_us / 1000:.1f} ms", f"of {TICK_MS:.0f} ms"
    )
    figure("telemetry frames during the run", f"{pace['frames']:.0f} of {HEAT_S * 10}", "10 Hz")
    figure("MCU resets during the run", f"{pace.get('resets', 0):.0f}", "0")
    figure("chassis air at the end, faults", f"{pace['air_c']:.1f} °C, {pace['faults']:04x}", "target 45 °C, 0000")
    figure(f"wall time for {HEAT_S} simulated s", f"{wall:.0f} s", f"{HEAT_S / wall:.2f} simulated s per wall s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
