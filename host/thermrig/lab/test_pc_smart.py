"""The drive's own telemetry on a place's test PC: `nvme smart-log -o json` (and `nvme ocp smart-add-log
-o json`, the OCP extended SMART log, where the drive has it) read there over SSH, once a second, by one
SSH session for the length of the campaign (a loop on the test PC, its JSON streamed back:
no handshake a second). The place's `ssh` resource says where and as whom; the test PC's sudo rule
(docs/lab.md) lets that user run nvme-cli's smart-log without a password. The campaign machine's key is
ssh's own (or the [lab] table's ssh_key); the test PC's host key is learnt on first use into thermrig's
runtime folder."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from thermrig.children import stop_child
from thermrig.drive.smart import SmartError, is_ocp_log, parse_ocp_smart_log, parse_smart_log
from thermrig.dut.drive import DriveTelemetry
from thermrig.lab.client import Endpoint
from thermrig.lab.errors import LabError
from thermrig.lab.test_pc_ssh import ssh_argv, ssh_where

FIRST_SAMPLE_S = 15.0  # how long the first smart-log may take (SSH handshake, sudo)


def controller(target: str) -> str:
    """The NVMe controller of a namespace (/dev/nvme0n1 -> /dev/nvme0); the simulated test PC's "/dev/nvme0"."""
    name = Path(target).name
    if name.startswith("nvme") and "n" in name[4:]:
        return f"/dev/{name[: 4 + name[4:].index('n')]}"
    return "/dev/nvme0"


class SmartOverSsh:
    """A running SSH session that prints the drive's smart-log every second; sample() is the latest."""

    def __init__(self, ssh: Endpoint, device: str, place: str, key: str = "") -> None:
        self.ssh = ssh
        self.device = device
        self.place = place
        self.key = key
        self._proc: subprocess.Popen[str] | None = None
        self._latest: dict[str, float | int] = {}
        self._ocp: dict[str, int] = {}  # the OCP extended SMART log's fields, latest
        self._first = threading.Event()
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self.failure = ""

    @property
    def where(self) -> str:
        return ssh_where(self.ssh, self.place)

    def command(self) -> list[str]:
        ocp = f"sudo -n nvme ocp smart-add-log -o json {self.device} 2>/dev/null"  # a drive without C0h: nothing
        loop = f"while :; do sudo -n nvme smart-log -o json {self.device} || exit 1; echo; {ocp}; echo; sleep 1; done"
        return ssh_argv(self.ssh, loop, self.key)

    def start(self) -> SmartOverSsh:
        """LabError naming the place when no smart-log comes back."""
        self._proc = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self._reader = threading.Thread(target=self._read, name=f"smart-{self.place}", daemon=True)
        self._reader.start()
        if not self._first.wait(FIRST_SAMPLE_S) or not self._latest:
            self.stop()
            why = self.failure or f"no smart-log within {FIRST_SAMPLE_S:.0f} s"
            raise LabError(f"{self.where}: nvme smart-log -o json {self.device}: {why}")
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        decoder, buf = json.JSONDecoder(), ""
        for line in self._proc.stdout:
            buf += line
            text = buf.lstrip()
            try:
                data, _ = decoder.raw_decode(text)
            except ValueError:
                continue
            buf = ""
            if isinstance(data, dict) and is_ocp_log(data):
                try:
                    ocp = parse_ocp_smart_log(data)
                except SmartError:
                    continue  # a C0h log without throttling fields: the plain smart-log is what there is
                with self._lock:
                    self._ocp = ocp
                    if self._latest:
                        self._latest.update(ocp)
                continue
            try:
                fields = parse_smart_log(json.dumps(data)).fields()
            except SmartError as exc:
                self.failure = str(exc)
                break
            with self._lock:
                self._latest = {**fields, **self._ocp}
            self._first.set()
        if self._proc.stderr is not None and not self.failure:
            lines = self._proc.stderr.read().strip().splitlines()
            self.failure = lines[-1] if lines else "the SSH session ended"
        self._first.set()

    def sample(self) -> dict[str, float | int]:
        """The smart-log read since the last sample (nothing twice)."""
        with self._lock:
            fields, self._latest = self._latest, {}
        return fields

    def telemetry(self) -> DriveTelemetry:
        return DriveTelemetry(self.sample, f"nvme smart-log of {self.device} over SSH ({self.where.split(': ')[0]})")

    def stop(self) -> None:
        if self._proc is not None:
            stop_child(self._proc)
        if self._reader is not None:
            self._reader.join(5)
