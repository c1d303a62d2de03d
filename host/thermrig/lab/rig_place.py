"""A rig as a labgrid place: its serial port and its test PC's services as exporter resources (plain data),
and the tags campaigns select on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

# labgrid's tag keys ([a-z][a-z0-9_]+); values are kept to the same alphabet so filters match them as written.
TAG_KEYS = ("board", "firmware", "drive", "slot", "heatsink", "airflow")
FIO_SERVER_PORT = 8765  # fio --server's default port
SERIAL_RESOURCE = "serial"
FIO_RESOURCE = "fio"
SSH_RESOURCE = "ssh"


def tag_value(value: str) -> str:
    """A value as labgrid tags and reservation filters take it: lower case, [a-z0-9_]
    ("0.3.1+g1a2b" -> "0_3_1_g1a2b")."""
    return re.sub(r"[^a-z0-9_]", "_", value.strip().lower())


@dataclass(frozen=True)
class SerialPort:
    """The rig's serial port on the exporter's host: a tty path (RawSerialPort: a simulated rig's pty or a
    fixed device), or a udev match (USBSerialPort: a real rig found by its USB serial number wherever it
    enumerates)."""

    path: str | None = None
    udev_match: dict[str, str] = field(default_factory=dict)
    speed: int = 115200

    def resource(self) -> dict[str, object]:
        if self.udev_match:
            return {"cls": "USBSerialPort", "match": dict(self.udev_match), "speed": self.speed}
        if not self.path:
            raise ValueError("a serial port needs a path or a udev match")
        # labgrid's exporter asserts the path is under /dev: a simulated rig's symlink is resolved to its pty.
        return {"cls": "RawSerialPort", "port": str(Path(self.path).resolve()), "speed": self.speed}


@dataclass(frozen=True)
class TestPc:
    """The PC beside the rig that holds the drive: where fio's server and SSH (smart-log, nvme-cli) listen."""

    host: str
    user: str
    fio_port: int = FIO_SERVER_PORT
    ssh_port: int = 22

    __test__ = False  # not a pytest class

    def resources(self) -> dict[str, dict[str, object]]:
        return {
            FIO_RESOURCE: {"cls": "NetworkService", "address": self.host, "username": self.user, "port": self.fio_port},
            SSH_RESOURCE: {"cls": "NetworkService", "address": self.host, "username": self.user, "port": self.ssh_port},
        }


@dataclass(frozen=True)
class RigPlace:
    """One rig of the lab: the place's name (also the exporter's resource group), its serial port, its
    test PC and its tags (board, firmware, drive and the hardware that stays fixed: slot, heatsink, airflow)."""

    name: str
    serial: SerialPort
    test_pc: TestPc
    tags: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.name):
            raise ValueError(f"place name {self.name!r}: use letters, digits, '_', '.', '-'")

    def exporter_config(self) -> dict[str, dict[str, object]]:
        """The exporter's resource file: one group named after the place."""
        group: dict[str, object] = {SERIAL_RESOURCE: self.serial.resource(), **self.test_pc.resources()}
        return {self.name: group}

    def clean_tags(self) -> dict[str, str]:
        return {key: tag_value(value) for key, value in self.tags.items() if value}

    def match_pattern(self, exporter: str) -> str:
        """The place's match: every resource of its group on that exporter."""
        return f"{exporter}/{self.name}/*"


def exporter_yaml(place: RigPlace) -> str:
    """The file `labgrid-exporter -c COORDINATOR -n NAME FILE` reads."""
    import yaml

    # labgrid renders the file with Jinja2 first: '#' starts a statement there, '##' a comment
    header = f"## labgrid exporter resources for rig place {place.name} (written by `thermrig lab export`)\n"
    return header + yaml.safe_dump(place.exporter_config(), sort_keys=False)
