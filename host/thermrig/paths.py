"""Where thermrig keeps things: XDG config, data and runtime dirs, and the repository's build outputs."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _xdg(var: str, fallback: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / fallback) / "thermrig"


def config_dir() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config")


def data_dir() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share")


def runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "thermrig" if base else _xdg("XDG_STATE_HOME", ".local/state")


def rigsim_binary() -> Path:
    """The simulated rig's firmware: $THERMRIG_RIGSIM, else the repository's build."""
    env = os.environ.get("THERMRIG_RIGSIM")
    return Path(env) if env else REPO_ROOT / "build" / "host" / "rigsim"
