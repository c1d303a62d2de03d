"""What `thermrig lab status` shows: each place, who holds it since when, its tags, its firmware against
this checkout's (the firmware tag, which every HELLO thermrig sees through the place rewrites: a campaign's
start check, `lab check`, `flash --lab`) and what it runs, how far (the place's comment, which a lab
campaign rewrites at each run and phase)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from thermrig.lab.client import LabClient
from thermrig.lab.rig_place import tag_value


@dataclass(frozen=True)
class PlaceRow:
    name: str
    holder: str  # "" when free
    since: str
    tags: str
    running: str
    firmware: str  # the place's firmware tag against this checkout's: "TAG: current", "TAG: differs", "" (no tag)


def lab_status(coordinator: str, checkout: str = "") -> list[PlaceRow]:
    """checkout: this checkout's firmware version, to compare each place's firmware tag with."""
    with LabClient(coordinator) as client:
        views = client.places()
    rows = []
    for view in views:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(view.changed)) if view.acquired else ""
        tags = " ".join(f"{k}={v}" for k, v in sorted(view.tags.items()))
        tag = view.tags.get("firmware", "")
        verdict = "" if not tag or not checkout else ("current" if tag == tag_value(checkout) else "differs")
        firmware = f"{tag}: {verdict}" if verdict else tag
        rows.append(PlaceRow(view.name, view.acquired or "", since, tags, view.comment, firmware))
    return rows
