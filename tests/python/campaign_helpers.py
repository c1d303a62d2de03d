"""What the tests that run `thermrig` as a child share: the command, short campaign files, the runs'
manifests. The child's environment (isolated XDG dirs, the private influxd) is conftest's influx_env."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from interruptible import with_default_sigint

THERMRIG = [sys.executable, "-m", "thermrig.cli"]

TomlValue = str | int | float | Sequence[str]


def thermrig(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*THERMRIG, *args], env=env, capture_output=True, text=True, timeout=timeout)


def run_args(path: Path, out: Path) -> list[str]:
    """`thermrig run`'s arguments for a campaign file into a campaign folder, without asking."""
    return ["run", str(path), "--no-prompt", "--out", str(out)]


def start_run(path: Path, out: Path, env: dict[str, str], **popen: object) -> subprocess.Popen[str]:
    """`thermrig run` in the background, for the tests that watch or interrupt it."""
    cmd = with_default_sigint([*THERMRIG, *run_args(path, out)])
    return subprocess.Popen(cmd, env=env, text=True, **popen)  # type: ignore[call-overload]


def manifests(folder: Path) -> dict[str, dict]:
    """Each run's manifest in a campaign folder, by run id."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(folder.glob("*/manifest.json"))}


def run_ids(folder: Path, campaign_name: str, count: int) -> set[str]:
    """The run ids of a campaign folder: <campaign>-<the folder's start stamp>-<index>."""
    stamp = json.loads((folder / "state.json").read_text())["started"]
    assert len(stamp) == 15 and stamp[8] == "T"
    return {f"{campaign_name}-{stamp}-{i:03d}" for i in range(1, count + 1)}


def file_drive(folder: Path, size: str) -> dict[str, TomlValue]:
    """A [drive] table: a plain file of that size in folder, which fio writes."""
    return {"target": str(folder / "drive.dat"), "size": size, "model": "file"}


VIRTUAL_DRIVE: dict[str, TomlValue] = {"target": "virtual", "scale": 0.05}


def _toml(value: TomlValue) -> str:
    return repr(value) if isinstance(value, int | float) else json.dumps(value if isinstance(value, str) else [*value])


@dataclass(frozen=True)
class CampaignFile:
    """A campaign short enough for a test: one seq_write workload per slot, equilibrium and cool-down
    judged loosely, on the simulated rig at 10x unless rig says otherwise."""

    name: str
    drive: dict[str, TomlValue]
    rig: dict[str, TomlValue] = field(default_factory=lambda: {"port": "sim", "speed": 10})
    seed: int = 3
    slots: Sequence[str] = ("top",)
    runtime_s: int = 3
    equilibrium_channels: Sequence[str] = ()

    def text(self) -> str:
        equilibrium: dict[str, TomlValue] = {"rate_c_per_min": 1.0, "window_s": 20, "timeout_s": 900}
        if self.equilibrium_channels:
            equilibrium["channels"] = self.equilibrium_channels
        tables: list[tuple[str, dict[str, TomlValue]]] = [
            ("[campaign]", {"name": self.name, "seed": self.seed, "baseline_s": 3}),
            ("[rig]", self.rig),
            ("[drive]", self.drive),
            ("[equilibrium]", equilibrium),
            ("[cooldown]", {"margin_c": 1.0, "timeout_s": 300}),
            ("[factors]", {"slot": self.slots, "profile": ["single_gpu_load"]}),
            ("[[workload]]", {"name": "sw", "kind": "seq_write", "runtime_s": self.runtime_s}),
        ]
        return "\n".join(
            "\n".join([header, *(f"{k} = {_toml(v)}" for k, v in values.items())]) + "\n" for header, values in tables
        )

    def write(self, folder: Path) -> Path:
        """The file <name>.toml in folder."""
        path = folder / f"{self.name}.toml"
        path.write_text(self.text())
        return path
