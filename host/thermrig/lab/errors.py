"""What can go wrong in a lab, each one line naming what and where (the CLI prints it as it stands)."""

from __future__ import annotations

from thermrig.errors import ThermrigError


class LabError(ThermrigError):
    """Anything the lab refuses: a coordinator not there, a place missing or held by someone else."""


class CoordinatorUnreachable(LabError):
    pass


class NoSuchPlace(LabError):
    pass


class PlaceTaken(LabError):
    pass
