"""Print the firmware core's flash and RAM on Cortex-M4F and each Zephyr image's; fail when over budget (make size).

report_size.py CORE_ELF FLASH_BUDGET RAM_BUDGET [--images FLASH_BUDGET RAM_BUDGET ELF...]
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    name: str
    size: int
    vma: int
    lma: int
    flags: frozenset[str]


@dataclass(frozen=True)
class Usage:
    flash: int
    ram: int


def sections(elf: str) -> list[Section]:
    """The ELF's sections as objdump lists them (name, size, VMA, LMA, flags)."""
    out = subprocess.run(["arm-none-eabi-objdump", "-h", "-w", elf], check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split(maxsplit=7)
        if len(parts) == 8 and parts[0].isdigit():
            flags = frozenset(f.strip() for f in parts[7].split(","))
            found.append(Section(parts[1], int(parts[2], 16), int(parts[3], 16), int(parts[4], 16), flags))
    return found


def image_usage(elf: str) -> Usage:
    """Flash: every section stored in the image (code, rodata, the initial values of data).
    RAM: every section that lives in RAM (data, which is copied there at boot, bss, noinit)."""
    alloc = [s for s in sections(elf) if "ALLOC" in s.flags]
    flash = sum(s.size for s in alloc if "LOAD" in s.flags)
    ram = sum(s.size for s in alloc if "LOAD" not in s.flags or s.vma != s.lma)
    return Usage(flash, ram)


def core_report(elf: str, flash_budget: int, ram_budget: int) -> bool:
    out = subprocess.run(["arm-none-eabi-size", "-A", elf], check=True, capture_output=True, text=True).stdout
    rows = (line.split() for line in out.splitlines())
    sizes = {parts[0]: int(parts[1]) for parts in rows if len(parts) == 3 and parts[1].isdigit()}
    flash = sum(sizes.get(s, 0) for s in (".isr_vector", ".text", ".ARM.exidx", ".data"))
    ram = sizes.get(".data", 0) + sizes.get(".bss", 0)
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
    return flash <= flash_budget and ram <= ram_budget


def image_report(elf: str, flash_budget: int, ram_budget: int) -> bool:
    # build/zephyr/<board>/zephyr/zephyr.elf
    board = Path(elf).parent.parent.name
    use = image_usage(elf)
    print(
        f"zephyr image {board}: flash {use.flash} B ({use.flash / 1024:.1f} KiB, budget {flash_budget // 1024} KiB), "
        f"RAM {use.ram} B ({use.ram / 1024:.1f} KiB, budget {ram_budget // 1024} KiB)"
    )
    return use.flash <= flash_budget and use.ram <= ram_budget


def main() -> int:
    args = sys.argv[1:]
    images = args[args.index("--images") + 1 :] if "--images" in args else []
    ok = core_report(args[0], int(args[1]), int(args[2]))
    if images:
        flash_budget, ram_budget = int(images[0]), int(images[1])
        ok = all([image_report(elf, flash_budget, ram_budget) for elf in images[2:]]) and ok
    print("size: within budget" if ok else "size: OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
