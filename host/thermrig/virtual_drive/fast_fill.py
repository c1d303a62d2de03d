"""The fast path of fills on the virtual drive: what a workload's fill leaves, set in the model at once
instead of writing up to twice the capacity through the wire (docs/virtual-drive.md)."""

from __future__ import annotations

from thermrig.virtual_drive.drive_model import DriveModel

PASSES = {"consistency": 1, "snia_precondition": 2}  # a fill; SNIA PTS's 2x capacity sequential


def fast_fill(model: DriveModel, kind: str, span: int | None) -> None:
    """Purge, then `kind`'s sequential passes over [0, span) (None: the whole drive), as the methods
    begin (AnandTech's consistency test from a secure erase, SNIA PTS from a purge)."""
    model.fill(span, PASSES[kind])
