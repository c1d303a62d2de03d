"""`make bench`: every benchmark's figures, printed and written into docs/figures.md (bench/figures_page.py).
`BENCHES="bench_a bench_b" make bench` runs only those. Nothing here asserts a time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from figures_page import Measured, conditions, write

HERE = Path(__file__).resolve().parent
BENCHES = [
    "bench_telemetry",
    "bench_timesync",
    "bench_time_speed",
    "bench_hold",
    "bench_cooldown",
    "bench_plan_model",
    "bench_plan_time",
    "bench_speed",
    "bench_faults",
    "bench_reconnect",
    "bench_influx",
    "bench_campaign",
    "bench_rig_time",
    "bench_load_invariance",
    "bench_virtual_drive",
    "bench_drive_data",
    "bench_zephyr_emulated",
    "bench_stm32_emulator",
    "bench_rp2040",
    "bench_rp2040_heap",
    "bench_micropython",
    "bench_report",
    "bench_sensor_ranking",
    "bench_identify",
    "bench_tune",
    "bench_step_landing",
    "bench_lab_campaign",
    "bench_lab_forward",
    "bench_wheel",
    "bench_make_times",
]


def run(name: str, root: Path) -> Measured:
    doc = (HERE / f"{name}.py").read_text().split('"""')[1].strip()
    print(f"\n{name}: {doc}", flush=True)
    started, load_before, revision, machine = conditions(root)
    proc = subprocess.Popen(
        [sys.executable, str(HERE / f"{name}.py")], cwd=HERE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:  # shown as it comes: some benchmarks take minutes
        print(line, end="", flush=True)
        lines.append(line)
    ok = proc.wait() == 0
    return Measured(name, doc, "".join(lines), ok, started, load_before, os.getloadavg()[0], revision, machine)


def main() -> int:
    root = HERE.parent
    chosen = os.environ.get("BENCHES", "").split() or BENCHES
    unknown = [n for n in chosen if n not in BENCHES]
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    measured = []
    for name in chosen:
        measured.append(run(name, root))
        # after each, so a later failure keeps it; a run of all of them writes the page anew
        write(root / "docs" / "figures.md", measured, BENCHES, whole=chosen == BENCHES)
    failed = sum(not m.ok for m in measured)
    if not os.environ.get("BENCHES"):
        print("\nfirmware core size:", flush=True)
        failed += subprocess.run(["make", "--no-print-directory", "-C", str(root), "size"]).returncode != 0
    print(f"\nwritten: {root / 'docs' / 'figures.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
