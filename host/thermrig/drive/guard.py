"""Before fio writes to a target: refuse a block device that is mounted, holds partitions or a
filesystem signature, and a file holding a partition table or filesystem, unless the campaign names
the device's serial and the operator passed --destroy."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from thermrig.errors import ThermrigError
from thermrig.settings import find_tool


class UnsafeTarget(ThermrigError, RuntimeError):
    pass


@dataclass(frozen=True)
class TargetFacts:
    path: str
    block_device: bool
    serial: str | None
    model: str | None
    firmware: str | None
    mounted: list[str]
    partitions: list[str]
    signatures: list[str]  # filesystem or partition-table signatures found by wipefs


def _run_json(cmd: list[str]) -> dict:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    if r.returncode != 0 or not r.stdout.strip():
        return {}
    return json.loads(r.stdout)


def inspect_target(path: str) -> TargetFacts:
    if not os.path.exists(path):
        return TargetFacts(path, False, None, None, None, [], [], [])
    block = stat.S_ISBLK(os.stat(path).st_mode)
    signatures = [
        f"{s.get('type', '?')}@{s.get('offset', '?')}"
        for s in _run_json([str(find_tool("wipefs")), "--no-act", "--json", path]).get("signatures", [])
    ]
    if not block:
        return TargetFacts(path, False, None, None, None, [], [], signatures)
    tree = _run_json(["lsblk", "--json", "-o", "PATH,TYPE,MOUNTPOINTS,SERIAL,MODEL", path]).get("blockdevices", [])
    top = tree[0] if tree else {}
    mounted, partitions = [], []

    def walk(node: dict) -> None:
        mounted.extend(m for m in node.get("mountpoints") or [] if m)
        for child in node.get("children") or []:
            if child.get("type") == "part":
                partitions.append(child.get("path", "?"))
            walk(child)

    walk(top)
    firmware = None
    with contextlib.suppress(OSError):  # NVMe and SCSI disks expose it in sysfs
        firmware = (
            (Path("/sys/class/block") / Path(path).resolve().name / "device" / "firmware_rev").read_text().strip()
        )
    return TargetFacts(path, True, top.get("serial"), top.get("model"), firmware, mounted, partitions, signatures)


def check_target(path: str, campaign_serial: str | None, destroy: bool) -> TargetFacts:
    """Raise UnsafeTarget with the reason, or return what was found."""
    facts = inspect_target(path)
    problems = []
    if facts.mounted:
        problems.append(f"mounted at {', '.join(facts.mounted)}")
    if facts.partitions:
        problems.append(f"holds partitions {', '.join(facts.partitions)}")
    if facts.signatures:
        problems.append(f"holds data signatures {', '.join(facts.signatures)}")
    if not problems:
        if facts.block_device and not destroy:
            raise UnsafeTarget(f"{path} is a block device: fio will overwrite it; pass --destroy to confirm")
        return facts
    if facts.mounted:
        raise UnsafeTarget(f"refusing to write to {path}: {'; '.join(problems)} (unmount it first)")
    serial_ok = campaign_serial is not None and (not facts.block_device or campaign_serial == facts.serial)
    if not (serial_ok and destroy):
        need = f"the campaign's [drive] serial = {facts.serial!r} and --destroy" if facts.block_device else "--destroy"
        raise UnsafeTarget(f"refusing to write to {path}: {'; '.join(problems)}; to erase it anyway give {need}")
    return facts
