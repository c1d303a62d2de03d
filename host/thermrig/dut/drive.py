"""A drive under test: what fio writes to, seen by a campaign only through this protocol. A block
device, a file, an NBD export (a drive served from another machine) and the simulated rig's virtual
drive each say how fio reaches them, how their own telemetry is read, whether they can take a filled
state at once (and take it), what to do around a workload, and the NVMe thermal management it offers."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from thermrig.errors import ThermrigError

TelemetrySource = Callable[[], dict[str, float | int]]  # one sample of the drive's own sensors


class DriveLost(ThermrigError, RuntimeError):
    """The drive under test stopped serving (its server died, or the virtual drive's data store is full):
    the campaign stops, the rig put safe."""


@dataclass(frozen=True)
class Fill:
    """The state a fill leaves: `passes` sequential writes over [0, span) (None: the whole drive)."""

    span: int | None
    passes: int


@dataclass(frozen=True)
class WorkDone:
    """The drive's own count of its work since it started serving (the virtual drive's accounts; a real
    drive keeps none): what it wrote, and the wall time it had nothing in flight because the host sent
    nothing (docs/analysis.md, "Whose fall it is"). Its rate while fed is the written bytes over the wall
    time less the starved time."""

    written: float  # bytes, at the drive's scale
    starved_s: float


@dataclass(frozen=True)
class DriveTelemetry:
    source: TelemetrySource | None  # None: the drive's own telemetry cannot be read
    described: str  # how the manifest describes it


class ThermalManagement(Protocol):
    """A drive's NVMe thermal configuration and host-controlled thermal management (HCTM): what `nvme
    id-ctrl -o json` prints, and the HCTM feature (`nvme get-feature` / `set-feature -f 0x10`), whose
    value is TMT1 << 16 | TMT2 in kelvin (0: off). Parsed and checked in thermrig.drive.thermal_config."""

    def identify(self) -> str:
        """`nvme id-ctrl -o json`'s output."""
        ...

    def hctm(self) -> int:
        """The current HCTM feature value."""
        ...

    def set_hctm(self, value: int) -> None:
        """Set the HCTM feature; a value the drive refuses raises (ThermrigError)."""
        ...


class DriveUnderTest(Protocol):
    @property
    def name(self) -> str:
        """How the manifest names the target: a device or file path, an NBD URI, or "virtual"."""
        ...

    @property
    def size(self) -> str:
        """The region fio works on when the workload gives no span: "" for the whole device, a size
        for a file (created at that size)."""
        ...

    @property
    def scale(self) -> float:
        """Wire bytes per drive byte: run summaries hold bandwidth and IOPS at the drive's own scale."""
        ...

    def fio_lines(self, iodepth: int) -> list[str]:
        """The [global] lines that point fio at the drive (engine, filename or URI, direct I/O)."""
        ...

    @property
    def fio_server(self) -> str | None:
        """Where fio runs against the drive: None on this machine; "HOST,PORT" of a fio server on the
        machine that holds it (a lab's test PC), reached in fio's client/server mode."""
        ...

    def telemetry(self) -> DriveTelemetry: ...

    def work_done(self) -> WorkDone | None:
        """The drive's own count of its work (the virtual drive's), None where it keeps none."""
        ...

    def take_fill(self, fill: Fill) -> bool:
        """Set the state `fill` leaves at once, if the drive can (the virtual drive): whether it did."""
        ...

    def serving(self) -> AbstractContextManager[None]:
        """Held while fio runs against the drive; the drive idles afterwards."""
        ...

    def thermal(self) -> ThermalManagement | None:
        """The drive's thermal configuration and HCTM, where it can be reached (an NVMe drive, the virtual
        drive); None otherwise (a file on a non-NVMe file system, an NBD export)."""
        ...
