"""The durable spool: every point goes to an append-only, fsync'd file per run before InfluxDB.

<run>.lp holds line protocol, one point per line; <run>.sent holds the byte offset up to which
InfluxDB has acknowledged the points (written atomically). A crash loses nothing that was appended:
the next start drains from the acknowledged offset. Replaying a point is harmless (same series and
timestamp overwrite themselves), so "at least once" from the spool is "exactly once" in InfluxDB.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from thermrig.paths import data_dir


def spool_dir() -> Path:
    return data_dir() / "spool"


@dataclass
class Spool:
    path: Path  # the .lp file

    @classmethod
    def for_run(cls, run: str, folder: Path | None = None) -> Spool:
        folder = folder or spool_dir()
        folder.mkdir(parents=True, exist_ok=True)
        spool = cls(folder / f"{run}.lp")
        spool._repair()
        return spool

    @property
    def offset_path(self) -> Path:
        return self.path.with_suffix(".sent")

    def _repair(self) -> None:
        """A crash mid-append can leave half a line at the end: drop it (it was never complete)."""
        if not self.path.exists():
            return
        with self.path.open("rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return
            fh.seek(max(0, size - 4096))
            tail = fh.read()
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n")
            fh.truncate(size - len(tail) + cut + 1 if cut >= 0 else max(0, size - len(tail)))
            os.fsync(fh.fileno())

    def append(self, lines: list[str]) -> None:
        """Append points and fsync: once this returns, they survive a crash or power cut."""
        if not lines:
            return
        data = ("\n".join(lines) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def sent(self) -> int:
        try:
            return int(self.offset_path.read_text())
        except (OSError, ValueError):
            return 0

    def mark_sent(self, offset: int) -> None:
        tmp = self.offset_path.with_suffix(".sent.tmp")
        with tmp.open("w") as fh:
            fh.write(str(offset))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.offset_path)

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def pending_bytes(self) -> int:
        return max(0, self.size() - self.sent())

    def read_batch(self, offset: int, max_lines: int) -> tuple[list[str], int]:
        """Up to max_lines whole lines from offset; returns them and the offset after them."""
        with self.path.open("rb") as fh:
            fh.seek(offset)
            lines: list[str] = []
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # being appended right now
                lines.append(raw[:-1].decode())
                offset += len(raw)
                if len(lines) >= max_lines:
                    break
        return lines, offset


def pending_spools(folder: Path | None = None) -> list[Spool]:
    folder = folder or spool_dir()
    if not folder.exists():
        return []
    return [s for s in (Spool(p) for p in sorted(folder.glob("*.lp"))) if s.pending_bytes() > 0]
