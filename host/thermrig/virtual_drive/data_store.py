"""Where the virtual drive keeps what is written (`keep_data`): a sparse file the size of the export in
the drive's folder, which the nbdkit plugin writes into, reads from and punches holes in (TRIM and
write-zeroes). It holds only what the workload wrote and has not trimmed, never the export's size, and
at most `cap` bytes: past that, writes that need new space are refused with ENOSPC (the plugin counts
them in the exchange file's accounts, `refused_writes`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CAP = 8 << 30  # `thermrig sim --drive`: 8 GiB kept, at most


@dataclass(frozen=True)
class DataStore:
    path: Path
    capacity: int  # the export's size: the file's apparent size
    cap: int  # bytes the file may hold

    def create(self) -> DataStore:
        with open(self.path, "wb") as f:
            f.truncate(self.capacity)  # sparse: no block is held until written
        return self

    def kept_bytes(self) -> int:
        """What the store holds now (the file system's blocks, not the apparent size)."""
        return os.stat(self.path).st_blocks * 512

    def discard(self) -> None:
        """Everything goes (a format or a fill's purge): the file keeps its inode, which the plugin has
        open, and becomes a hole throughout. Only with no request in flight (between workloads)."""
        os.truncate(self.path, 0)
        os.truncate(self.path, self.capacity)

    def plugin_args(self) -> list[str]:
        return [f"data={self.path}", f"data-cap={self.cap}"]
