"""Which LBAs of the virtual drive hold data: one byte per chunk (64 KiB), set by writes, cleared by
TRIM and format. Coarse on purpose: a write maps every chunk it touches, a TRIM unmaps only the chunks
it covers whole (as a drive deallocates at its own granularity), and 512 GB costs 7.8 MB."""

from __future__ import annotations

CHUNK = 64 * 1024


class LbaMap:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._map = bytearray(-(-capacity // CHUNK))
        self._mapped = 0  # chunks set

    @property
    def mapped_bytes(self) -> int:
        return min(self.capacity, self._mapped * CHUNK)

    def write(self, offset: int, length: int) -> int:
        """Map the chunks the write touches; returns the bytes newly mapped."""
        a, b = offset // CHUNK, min(len(self._map), -(-(offset + length) // CHUNK))
        if b - a == 1:  # the common small write: no slice objects
            if self._map[a]:
                return 0
            self._map[a] = 1
            self._mapped += 1
            return CHUNK
        new = (b - a) - self._map.count(1, a, b)
        self._mapped += new
        self._map[a:b] = b"\x01" * (b - a)
        return new * CHUNK

    def trim(self, offset: int, length: int) -> None:
        a, b = -(-offset // CHUNK), min(len(self._map), (offset + length) // CHUNK)
        if offset + length >= self.capacity:
            b = len(self._map)  # the last, partial chunk goes with a TRIM to the end
        if b <= a:
            return
        self._mapped -= self._map.count(1, a, b)
        self._map[a:b] = bytes(b - a)

    def fill(self, length: int) -> None:
        """Map [0, length): what a sequential fill of that span leaves."""
        self.write(0, max(CHUNK, min(length, self.capacity)))

    def clear(self) -> None:
        self._map[:] = bytes(len(self._map))
        self._mapped = 0
