"""`make bench`: every benchmark's figures, printed. Nothing here asserts a time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = [
    "bench_telemetry",
    "bench_timesync",
    "bench_time_speed",
    "bench_hold",
    "bench_cooldown",
    "bench_speed",
    "bench_faults",
    "bench_reconnect",
    "bench_influx",
    "bench_campaign",
    "bench_virtual_drive",
    "bench_drive_data",
    "bench_zephyr_emulated",
    "bench_micropython",
    "bench_report",
    "bench_sensor_ranking",
    "bench_identify",
    "bench_tune",
    "bench_lab_campaign",
]


def main() -> int:
    failed = 0
    for name in BENCHES:
        doc = (HERE / f"{name}.py").read_text().split('"""')[1].strip()
        print(f"\n{name}: {doc}", flush=True)
        failed += subprocess.run([sys.executable, str(HERE / f"{name}.py")], cwd=HERE).returncode != 0
    print("\nfirmware core size:", flush=True)
    root = HERE.parent
    failed += subprocess.run(["make", "--no-print-directory", "-C", str(root), "size"]).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
