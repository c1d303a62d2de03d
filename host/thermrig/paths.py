"""Where thermrig keeps things: the repository (its build outputs and firmware sources). The user's
folders and the tools' locations come from the environment: thermrig.settings."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
