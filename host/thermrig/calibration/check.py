"""One calibration check: published vs measured, and whether it is within its stated tolerance."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CalibrationCheck:
    source: str  # seed and what
    cell: str
    published: str
    measured: str
    ok: bool
