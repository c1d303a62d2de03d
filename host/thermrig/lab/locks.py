"""Our own record of the places we hold: one file per place while a thermrig process holds it, so a
lock left by a process that died (killed, crashed) is found and released at the next start. labgrid's
locks outlive their client: the coordinator only knows "host/user", not which process."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from thermrig.settings import runtime_dir


@dataclass(frozen=True)
class LockRecord:
    coordinator: str
    place: str
    holder: str  # "host/user", as the coordinator names us
    pid: int
    started: float
    purpose: str

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class LockBook:
    """The records under a folder (default: thermrig's runtime dir, lab/locks)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or runtime_dir() / "lab" / "locks"

    def _path(self, coordinator: str, place: str) -> Path:
        return self.folder / f"{coordinator.replace(':', '_').replace('/', '_')}--{place}.json"

    def write(self, coordinator: str, place: str, holder: str, purpose: str) -> LockRecord:
        record = LockRecord(coordinator, place, holder, os.getpid(), time.time(), purpose)
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(coordinator, place)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(record)))
        tmp.replace(path)
        return record

    def remove(self, record: LockRecord) -> None:
        self._path(record.coordinator, record.place).unlink(missing_ok=True)

    def records(self, coordinator: str) -> list[LockRecord]:
        out = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                record = LockRecord(**json.loads(path.read_text()))
            except (OSError, ValueError, TypeError):
                continue
            if record.coordinator == coordinator:
                out.append(record)
        return out

    def stale(self, coordinator: str) -> list[LockRecord]:
        """Records whose process is gone."""
        return [r for r in self.records(coordinator) if not r.alive()]
