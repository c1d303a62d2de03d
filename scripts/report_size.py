"""Print the firmware core's flash and RAM on Cortex-M4F and fail when over budget (make size)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    elf, flash_budget, ram_budget = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out = subprocess.run(["arm-none-eabi-size", "-A", elf], check=True, capture_output=True, text=True).stdout
    rows = (line.split() for line in out.splitlines())
    sections = {parts[0]: int(parts[1]) for parts in rows if len(parts) == 3 and parts[1].isdigit()}
    flash = sum(sections.get(s, 0) for s in (".isr_vector", ".text", ".ARM.exidx", ".data"))
    ram = sections.get(".data", 0) + sections.get(".bss", 0)
    frames = []
    for su in Path(elf).parent.glob("*.su"):
        for line in su.read_text().splitlines():
            where, size, _kind = line.rsplit("\t", 2)
            frames.append((int(size), where.rsplit(":", 1)[-1]))
    frames.sort(reverse=True)
    print(
        f"core on Cortex-M4F (-Os, newlib-nano): flash {flash} B ({flash / 1024:.1f} KiB, budget "
        f"{flash_budget // 1024} KiB), static RAM {ram} B ({ram / 1024:.1f} KiB, budget {ram_budget // 1024} KiB)"
    )
    print("largest stack frames: " + ", ".join(f"{name} {size} B" for size, name in frames[:4]))
    ok = flash <= flash_budget and ram <= ram_budget
    print("size: within budget" if ok else "size: OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
