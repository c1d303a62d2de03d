"""The drive's temperatures as Linux hwmon exposes them: /sys/class/hwmon/hwmonN with name "nvme",
temp1 "Composite", temp2.. "Sensor 1".., values in millidegrees Celsius."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HWMON_ROOT = Path("/sys/class/hwmon")


@dataclass(frozen=True)
class HwmonReading:
    label: str  # "Composite", "Sensor 1", ...
    celsius: float

    @property
    def field(self) -> str:
        return "hwmon_" + self.label.lower().replace(" ", "")  # hwmon_composite, hwmon_sensor1


def nvme_hwmon_dir(controller: str, root: Path = HWMON_ROOT) -> Path | None:
    """The hwmon folder of an NVMe controller (e.g. "nvme0"), found through its device link."""
    if not root.exists():
        return None
    for hw in sorted(root.iterdir()):
        try:
            name = (hw / "name").read_text().strip()
        except OSError:
            continue
        if name != "nvme":
            continue
        if (hw / "device").exists() and (hw / "device").resolve().name == controller:
            return hw
    return None


def read_hwmon(folder: Path) -> list[HwmonReading]:
    readings = []
    for inp in sorted(folder.glob("temp*_input"), key=lambda p: int(p.name[4:-6])):
        prefix = inp.name[: -len("_input")]
        try:
            value = int(inp.read_text().strip())
        except (OSError, ValueError):
            continue
        label_file = folder / f"{prefix}_label"
        label = label_file.read_text().strip() if label_file.exists() else prefix
        readings.append(HwmonReading(label, value / 1000.0))
    return readings
