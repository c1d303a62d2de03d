"""How thermrig reaches a place's test PC over SSH: ssh's own client, in batch mode (no password prompt),
the test PC's host key learnt on first use into thermrig's runtime folder, the campaign machine's key
the one given, else $THERMRIG_LAB_SSH_KEY, else ssh's own."""

from __future__ import annotations

import os
from pathlib import Path

from thermrig.lab.client import Endpoint
from thermrig.settings import runtime_dir

KEY_VARIABLE = "THERMRIG_LAB_SSH_KEY"  # the lab's key where no option or [lab] table gives one


def ssh_argv(ssh: Endpoint, remote: str, key: str = "", alive_s: int = 5) -> list[str]:
    """The ssh command that runs `remote` (a shell command line) on the test PC at `ssh`."""
    key = key or os.environ.get(KEY_VARIABLE, "")
    known = runtime_dir() / "lab" / "known_hosts"
    known.parent.mkdir(parents=True, exist_ok=True)
    return [
        "ssh", "-p", str(ssh.port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
        "-o", f"UserKnownHostsFile={known}", "-o", "ConnectTimeout=10", "-o", f"ServerAliveInterval={alive_s}",
        *(["-i", str(Path(key).expanduser()), "-o", "IdentitiesOnly=yes"] if key else []),
        f"{ssh.user}@{ssh.host}" if ssh.user else ssh.host, remote,
    ]  # fmt: skip


def ssh_where(ssh: Endpoint, place: str) -> str:
    return f"place {place}: its test PC's SSH at {ssh.user}@{ssh.host}:{ssh.port}"
