"""A simulated lab for the lab tests: a labgrid coordinator and exporters on loopback, each exporter
serving a simulated rig's pty (re-exported over ser2net RFC 2217 while its place is acquired). Every
process runs in its own session and its whole group is killed at the end: nothing outlives the test."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from waiting import wait_for

from thermrig.lab.client import LabClient
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

BIN = Path(sys.executable).parent


@dataclass
class Proc:
    """A child in its own session whose output is collected by a thread (the coordinator prints a lot)."""

    popen: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> Proc:
        popen = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        proc = cls(popen)
        threading.Thread(target=proc._collect, daemon=True).start()
        return proc

    def _collect(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        with suppress(ProcessLookupError):  # ser2net children left in the group
            os.killpg(self.popen.pid, signal.SIGKILL)


@dataclass
class Lab:
    address: str
    folder: Path
    coordinator: Proc
    rigs: dict[str, SimulatedRig] = field(default_factory=dict)
    exporters: dict[str, Proc] = field(default_factory=dict)
    ports: dict[str, tuple[int, int]] = field(default_factory=dict)  # place -> its test PC's fio and SSH ports

    def start_exporter(self, name: str, resources: Path, group: str) -> Proc:
        cmd = [str(BIN / "labgrid-exporter"), "-c", self.address, "-n", name, "--hostname", "127.0.0.1", str(resources)]
        proc = self.exporters[name] = Proc.start(cmd, self.folder)
        with LabClient(self.address) as client:

            def published() -> bool:
                client.sync()
                return bool(client.session.resources.get(name, {}).get(group))

            assert wait_for(published, 60), f"exporter {name} never published {group}:\n{proc.output()}"
        return proc


@contextmanager
def ssh_server(folder: Path, port: int) -> Iterator[Proc]:
    """OpenSSH's sshd on a loopback port with a host key of its own (a test PC's SSH), in the foreground."""
    sshd = Path("/usr/sbin/sshd")
    if not sshd.exists():
        raise AssertionError("sshd is missing: run scripts/setup_system.sh (Debian package openssh-server)")
    if not Path("/run/sshd").is_dir():  # its privilege separation directory, which its service unit makes
        Path("/run/sshd").mkdir(mode=0o755)
    key = folder / f"ssh_host_{port}"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    cmd = [str(sshd), "-D", "-e", "-f", "/dev/null", "-h", str(key), "-p", str(port),
           "-o", "ListenAddress=127.0.0.1", "-o", "PidFile=none"]  # fmt: skip
    proc = Proc.start(cmd, folder)
    try:
        assert wait_for(lambda: any("Server listening" in line for line in proc.lines), 30), proc.output()
        yield proc
    finally:
        proc.stop()


@contextmanager
def coordinator(folder: Path) -> Iterator[tuple[str, Proc]]:
    folder.mkdir(parents=True, exist_ok=True)
    proc = Proc.start([str(BIN / "labgrid-coordinator"), "--listen", "127.0.0.1:0"], folder)
    try:

        def listening() -> bool:
            return any(re.match(r"listening on 127\.0\.0\.1:\d+$", line) for line in proc.lines)

        assert wait_for(listening, 60), f"the coordinator did not listen:\n{proc.output()}"
        line = next(x for x in proc.lines if x.startswith("listening on "))
        yield line.removeprefix("listening on "), proc
    finally:
        proc.stop()


@contextmanager
def simulated_lab(folder: Path, names: list[str]) -> Iterator[Lab]:
    """A coordinator and one exporter per name, each exporting a free-running simulated rig's pty."""
    with ExitStack() as stack:
        address, proc = stack.enter_context(coordinator(folder / "coordinator"))
        lab = Lab(address, folder, proc)
        for name in names:
            lab.rigs[name] = stack.enter_context(SimulatedRig(SimConfig(seed=len(lab.rigs) + 1)))
        try:
            yield lab
        finally:
            for exporter in lab.exporters.values():
                exporter.stop()
