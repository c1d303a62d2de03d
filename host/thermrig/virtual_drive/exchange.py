"""The file the drive model and its nbdkit plugin share (firmware/sim/nbdkit/thermrig_drive.c, whose
`struct header` this mirrors): the figures the model decided this tick, written under a sequence lock;
the work the plugin's data path did, cumulative; and the LBA map, one byte per 64 KiB chunk after the
header, that the model's fill and format and the plugin's writes, TRIMs and block status share."""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path

from thermrig.virtual_drive.lba_map import CHUNK, LbaMap

MAGIC = 0x3156524444524854  # "THRDDRV1"
HEADER_BYTES = 4096
_IDENT = struct.Struct("<QQQ")  # magic, size, chunks
_SEQ = struct.Struct("<Q")  # at 24: odd while the figures are being written
_FIGURES = struct.Struct("<11dQQ")  # at 32
_ACCOUNTS = struct.Struct("<5dQQ2dQQ2d")  # at 256
_MAPPED = struct.Struct("<Q")  # accounts.mapped_chunks, at 296
_LATENESS = struct.Struct("<d")  # the plugin's worst reply lateness since last read, at LATENESS_AT
LATENESS_AT = 1024


@dataclass(frozen=True)
class Figures:
    """What the plugin times requests by until the next tick (DriveModel.service's inputs)."""

    scale: float
    rand_read_iops: float
    seq_read_bps: float
    qd1_read_iops: float
    rand_write_iops: float
    gc_write_iops: float
    seq_write_bps: float
    qd1_write_iops: float
    cap_read: float
    cap_write: float
    catch_up_s: float
    steady: int
    reset: int


@dataclass(frozen=True)
class Accounts:
    """The plugin's work since it started, at the drive's scale."""

    busy_read: float
    busy_write: float
    bytes_read: float
    bytes_written: float
    fresh: float
    mapped_chunks: int
    requests: int
    last_occupancy: float  # the last read's or write's service, as DriveModel.serve would give it
    last_latency: float
    replies: int  # requests the plugin has completed, TRIMs too (their replies handed to nbdkit)
    refused_writes: int  # writes refused with ENOSPC: the data store held its cap (data_store.py)
    idle_s: float  # wall seconds connections left the drive with nothing of theirs in flight between requests
    starved_s: float  # wall seconds the drive had nothing in flight at all, in gaps no turnaround explains


class Exchange:
    def __init__(self, path: Path, capacity: int) -> None:
        self.path = path
        self.chunks = -(-capacity // CHUNK)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, HEADER_BYTES + self.chunks)
            self.mm = mmap.mmap(fd, HEADER_BYTES + self.chunks)
        finally:
            os.close(fd)
        _IDENT.pack_into(self.mm, 0, MAGIC, capacity, self.chunks)
        self._seq = 0

    def write_figures(self, f: Figures) -> None:
        self._seq += 1
        _SEQ.pack_into(self.mm, 24, self._seq)  # odd: the plugin waits
        _FIGURES.pack_into(self.mm, 32, *astuple(f))
        self._seq += 1
        _SEQ.pack_into(self.mm, 24, self._seq)

    def accounts(self) -> Accounts:
        return Accounts(*_ACCOUNTS.unpack_from(self.mm, 256))

    def take_worst_late_s(self) -> float:
        """The plugin's own record of its lateness: how much later than the drive's timeline its latest
        reply since the last call went out (a thread woken late), cleared. A reply noted between the
        read and the clear is lost: a sample, not a count."""
        worst = float(_LATENESS.unpack_from(self.mm, LATENESS_AT)[0])
        _LATENESS.pack_into(self.mm, LATENESS_AT, 0.0)
        return max(0.0, worst)

    def close(self) -> None:
        self.mm.close()


class SharedLbaMap(LbaMap):
    """The LBA map in the exchange file. The plugin counts the chunks it maps and unmaps; the model
    changes the map (fill, format) only between workloads, with no request in flight; a clear discards
    the data kept too (`on_clear`), so a hole in the map reads as zeros."""

    def __init__(self, exchange: Exchange, capacity: int, on_clear: Callable[[], None] | None = None) -> None:
        self.capacity = capacity
        self._on_clear = on_clear
        self._x = exchange
        self._map = memoryview(exchange.mm)[HEADER_BYTES : HEADER_BYTES + exchange.chunks]

    @property
    def _mapped(self) -> int:  # type: ignore[override]
        return int(_MAPPED.unpack_from(self._x.mm, 296)[0])

    @_mapped.setter
    def _mapped(self, value: int) -> None:
        _MAPPED.pack_into(self._x.mm, 296, value)

    def _count(self, a: int, b: int) -> int:
        return bytes(self._map[a:b]).count(1)

    def write(self, offset: int, length: int) -> int:
        a, b = offset // CHUNK, min(len(self._map), -(-(offset + length) // CHUNK))
        new = (b - a) - self._count(a, b)
        self._map[a:b] = b"\x01" * (b - a)
        self._mapped += new
        return new * CHUNK

    def trim(self, offset: int, length: int) -> None:
        a, b = -(-offset // CHUNK), min(len(self._map), (offset + length) // CHUNK)
        if offset + length >= self.capacity:
            b = len(self._map)
        if b <= a:
            return
        self._mapped -= self._count(a, b)
        self._map[a:b] = bytes(b - a)

    def clear(self) -> None:
        self._map[:] = bytes(len(self._map))
        self._mapped = 0
        if self._on_clear is not None:
            self._on_clear()

    def snapshot(self) -> LbaMap:
        copy = LbaMap(self.capacity)
        copy._map[:] = self._map
        copy._mapped = self._mapped
        return copy

    def release(self) -> None:
        self._map.release()
