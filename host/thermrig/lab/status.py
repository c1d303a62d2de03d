"""What `thermrig lab status` shows: each place, who holds it since when, its tags and what it runs."""

from __future__ import annotations

import time
from dataclasses import dataclass

from thermrig.lab.client import LabClient


@dataclass(frozen=True)
class PlaceRow:
    name: str
    holder: str  # "" when free
    since: str
    tags: str
    running: str


def lab_status(coordinator: str) -> list[PlaceRow]:
    with LabClient(coordinator) as client:
        views = client.places()
    rows = []
    for view in views:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(view.changed)) if view.acquired else ""
        tags = " ".join(f"{k}={v}" for k, v in sorted(view.tags.items()))
        rows.append(PlaceRow(view.name, view.acquired or "", since, tags, view.comment))
    return rows
