"""A port of a lab machine's loopback reached from here through SSH (`ssh -N -L`), with the lab's key: what
a sealed lab carries its links over. A test PC's fio server listens on 127.0.0.1 there, an isolated
exporter's ser2net on its host's loopback, the coordinator on its own host's loopback; the local end of
the forward is a free port on this machine's 127.0.0.1, open for the length of a `with` block."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass, field
from types import TracebackType

from thermrig.children import stop_child, wait_for
from thermrig.db.local_server import free_port
from thermrig.lab.client import Endpoint
from thermrig.lab.errors import LabError
from thermrig.lab.test_pc_ssh import ssh_argv

OPEN_S = 20.0  # how long the SSH handshake and the forward's first connection may take


def answers(port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts a connection on this machine's 127.0.0.1:port (a forward's own end)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def far_end_answers(port: int, settle_s: float = 0.5) -> str | None:
    """None when the server behind a forward's local port answers, else why not. ssh accepts on its local
    end whatever the far end does, and closes the connection at once when the far end refuses: a
    connection still open after settle_s is the server's (one that speaks first, as sshd does, too)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=settle_s + 1) as s:
            s.settimeout(settle_s)
            try:
                return None if s.recv(1) else "the far end closed the connection: nothing listens there"
            except TimeoutError:
                return None
    except OSError as exc:
        return str(exc.strerror or exc)


@dataclass
class SshForward:
    """127.0.0.1:local here -> `remote_port` on the loopback of the machine `ssh` logs in to."""

    ssh: Endpoint  # the machine's sshd, and the user the lab's key logs in as
    remote_port: int
    what: str  # "place rig-a: its test PC's fio server at testpc-1,8765", for the one line a failure is
    key: str = ""  # the lab's key; "": ssh's own
    local_port: int = field(default_factory=free_port)
    _proc: subprocess.Popen[str] | None = field(default=None, repr=False)

    @property
    def local(self) -> Endpoint:
        return Endpoint("127.0.0.1", self.local_port, self.ssh.user)

    @property
    def describe(self) -> str:
        via = f"{self.ssh.host}:{self.ssh.port}"
        return f"the SSH forward 127.0.0.1:{self.local_port} -> {via} -> 127.0.0.1:{self.remote_port}"

    def command(self) -> list[str]:
        spec = f"127.0.0.1:{self.local_port}:127.0.0.1:{self.remote_port}"
        forward = ["-N", "-o", "ExitOnForwardFailure=yes", "-L", spec]
        argv = ssh_argv(self.ssh, "", self.key)
        return [*argv[:1], *forward, *argv[1:-1]]  # no remote command: -N

    def open(self) -> SshForward:
        """The forward up and its far end answering; LabError naming what and where when not."""
        self._proc = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        proc = self._proc
        if not wait_for(lambda: proc.poll() is not None or answers(self.local_port), OPEN_S):
            self.close()
            raise LabError(f"{self.what}: {self.describe} did not open in {OPEN_S:g} s")
        if proc.poll() is not None:
            why = self.ended()
            self._proc = None
            raise LabError(f"{self.what}: ssh to {self.ssh.user}@{self.ssh.host}:{self.ssh.port} for {self.describe} "
                           f"failed: {why}")  # fmt: skip
        if (why := far_end_answers(self.local_port)) is not None:
            self.close()
            raise LabError(f"{self.what} (through SSH) does not answer ({why})")
        return self

    def alive(self, settle_s: float = 0.0) -> bool:
        """Whether ssh still runs settle_s from now (a killed ssh's connections reset before it is reaped)."""
        if self._proc is None:
            return False
        try:
            self._proc.wait(settle_s)
        except subprocess.TimeoutExpired:
            return True
        return False

    def ended(self) -> str:
        """How a forward that is no longer alive ended: ssh's last line, or its exit status."""
        proc = self._proc
        if proc is None:
            return "closed"
        if proc.poll() is None:
            return "still open"
        lines = (proc.stderr.read() if proc.stderr else "").strip().splitlines()
        return lines[-1] if lines else f"ssh exited with status {proc.returncode}"

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_child(proc)

    def __enter__(self) -> SshForward:
        return self.open()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
