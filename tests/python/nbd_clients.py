"""Third-party NBD clients for the virtual drive's tests: libnbd's Python bindings through Debian's
python3 (the `nbd` module of python3-libnbd, what nbdsh runs), nbdinfo, qemu-io, fio."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

SYSTEM_PYTHON = "/usr/bin/python3"  # python3-libnbd's interpreter, not the venv's


def libnbd(script: str, uri: str, timeout: float = 120) -> Any:
    """Run `script` with `h`, a libnbd handle connected to `uri` (strict mode off: a careless client's
    requests reach the server), and `nbd`; the script prints one JSON value, returned."""
    head = "import json, sys, time, nbd\nh = nbd.NBD()\nh.set_strict_mode(0)\nh.connect_uri(sys.argv[1])\n"
    r = subprocess.run([SYSTEM_PYTHON, "-c", head + script, uri], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def libnbd_errno(call: str) -> str:
    """A script line that prints the errno name a request got ("" when it succeeded)."""
    return f"""
try:
    {call}
    print(json.dumps(""))
except nbd.Error as e:
    print(json.dumps(e.errno or ""))
"""


def nbdinfo_map(uri: str) -> list[dict[str, Any]]:
    r = subprocess.run(["nbdinfo", "--map", "--json", uri], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return list(json.loads(r.stdout))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def fio_json(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> dict[str, Any]:
    cmd = ["fio", "--output-format=json", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return dict(json.loads(r.stdout[r.stdout.index("{") :]))
