"""MicroPython's heap read from outside the emulated RP2040: its allocation table in a dump of the chip's
SRAM, found by firmware.elf's symbols (the runtime state `mp_state_ctx`, the linker's `__GcHeapStart` and
`__GcHeapEnd`). Free bytes are counted as gc.mem_free() counts them, and the largest free block is the
longest run of free blocks, what micropython.mem_info() prints as "max free sz" (but printing it would
put it on the USB link)."""

from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

SRAM_BASE = 0x20000000
BYTES_PER_BLOCK = 16  # MICROPY_BYTES_PER_GC_BLOCK on a 32-bit port: 4 words
BLOCKS_PER_ATB = 4  # 2 bits a block in the allocation table
AT_FREE, AT_HEAD, AT_TAIL, AT_MARK = 0, 1, 2, 3


class HeapMapError(Exception):
    """The dump does not hold a heap laid out as MicroPython lays it out."""


@dataclass(frozen=True)
class HeapSymbols:
    state: int  # mp_state_ctx
    state_size: int  # its bytes
    heap_start: int  # __GcHeapStart: where gc_init puts the allocation table
    heap_end: int  # __GcHeapEnd: the pool's end


@dataclass(frozen=True)
class HeapMap:
    pool: int  # bytes of the pool (the heap's size for objects)
    free: int  # bytes in free blocks
    largest_free: int  # bytes in the longest run of free blocks
    free_runs: int  # how many runs of free blocks there are (one: no fragmentation)
    marked: int  # blocks marked: a collection was under way when the dump was taken


def heap_symbols(elf: Path) -> HeapSymbols:
    out = subprocess.run(
        ["arm-none-eabi-nm", "--print-size", "--defined-only", str(elf)], capture_output=True, text=True, check=True
    )
    found: dict[str, int] = {}
    size = 0
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts and parts[-1] in ("mp_state_ctx", "__GcHeapStart", "__GcHeapEnd"):
            found[parts[-1]] = int(parts[0], 16)
            if parts[-1] == "mp_state_ctx" and len(parts) == 4:
                size = int(parts[1], 16)
    missing = {"mp_state_ctx", "__GcHeapStart", "__GcHeapEnd"} - found.keys()
    if missing:
        raise HeapMapError(f"{elf}: no symbol {', '.join(sorted(missing))}: not a MicroPython rp2 image")
    return HeapSymbols(found["mp_state_ctx"], size, found["__GcHeapStart"], found["__GcHeapEnd"])


def _word(ram: bytes, addr: int) -> int:
    at = addr - SRAM_BASE
    if not 0 <= at <= len(ram) - 4:
        raise HeapMapError(f"address 0x{addr:08x} is not in the SRAM dump")
    return int(struct.unpack_from("<I", ram, at)[0])


def heap_map(ram: bytes, sym: HeapSymbols) -> HeapMap:
    """The allocation table's account of the heap. The heap's area is found in mp_state_ctx by its
    fields' values (the table at the heap's start, its length, then within a few words the pool that ends
    at the heap's end), so the build's optional fields (memory statistics, a split heap's link, the
    finaliser and weak-reference tables) do not matter."""
    words = [_word(ram, sym.state + 4 * i) for i in range(sym.state_size // 4)]
    for i in range(len(words) - 3):
        if words[i] != sym.heap_start:
            continue
        atb_len = words[i + 1]
        pool_start = sym.heap_end - atb_len * BLOCKS_PER_ATB * BYTES_PER_BLOCK
        for j in range(i + 2, min(i + 6, len(words) - 1)):
            if words[j] == pool_start and words[j + 1] == sym.heap_end:
                return _scan(ram, sym.heap_start, atb_len)
    raise HeapMapError("no heap area (table at __GcHeapStart, pool up to __GcHeapEnd) in mp_state_ctx")


def _scan(ram: bytes, atb_start: int, atb_len: int) -> HeapMap:
    at = atb_start - SRAM_BASE
    table = ram[at : at + atb_len]
    free = largest = runs = marked = run = 0
    for byte in table:
        for shift in (0, 2, 4, 6):
            kind = (byte >> shift) & 3
            if kind == AT_FREE:
                free += 1
                run += 1
                if run == 1:
                    runs += 1
                largest = max(largest, run)
            else:
                run = 0
                marked += kind == AT_MARK
    return HeapMap(
        pool=atb_len * BLOCKS_PER_ATB * BYTES_PER_BLOCK,
        free=free * BYTES_PER_BLOCK,
        largest_free=largest * BYTES_PER_BLOCK,
        free_runs=runs,
        marked=marked,
    )
