"""An NVMe power state as a drive describes it (Identify Controller's power state descriptors): the most it
may draw there, and whether it is operational. A real drive reports them (nvme-cli), a virtual drive's
profile declares them (hardware/profiles/drives.toml, named PS0...)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PowerState:
    max_w: float
    operational: bool = True
    name: str = ""  # as a profile names it ("PS0"); a drive's own report has none
