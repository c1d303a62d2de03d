"""The durable spool: every point goes to an append-only, fsync'd file per run before InfluxDB.

<run>.lp holds line protocol, one point per line; <run>.sent holds the byte offset up to which
InfluxDB has acknowledged the points (written atomically). A crash loses nothing that was appended:
the next start drains from the acknowledged offset. Replaying a point is harmless (same series and
timestamp overwrite themselves), so "at least once" from the spool is "exactly once" in InfluxDB.

Spools live in the user's spool folder, or beside the rest of a run (a campaign's run folders): those
folders are noted in the spool folder's `folders` file, so `thermrig db drain` and `db status` find
every spool wherever it is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from thermrig.settings import data_dir


def spool_dir() -> Path:
    return data_dir() / "spool"


def _folders_file() -> Path:
    return spool_dir() / "folders"


def remember_folder(folder: Path) -> None:
    """Note a folder holding spools (directly or one level down, as a campaign's run folders do)."""
    folder = folder.resolve()
    if folder in spool_folders():
        return
    _folders_file().parent.mkdir(parents=True, exist_ok=True)
    with _folders_file().open("a") as fh:
        fh.write(f"{folder}\n")


def spool_folders() -> list[Path]:
    """The user's spool folder and every noted folder that still exists."""
    try:
        noted = [Path(line) for line in _folders_file().read_text().splitlines() if line]
    except OSError:
        noted = []
    return [spool_dir(), *(p for p in dict.fromkeys(noted) if p.is_dir())]


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


def pending_spools() -> list[Spool]:
    """Every spool, in every known folder, holding points InfluxDB has not acknowledged."""
    found: list[Spool] = []
    for folder in spool_folders():
        paths = sorted([*folder.glob("*.lp"), *folder.glob("*/*.lp")])
        found += [s for s in (Spool(p) for p in paths) if s.pending_bytes() > 0]
    return found
