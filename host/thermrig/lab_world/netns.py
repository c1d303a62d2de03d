"""A lab's network on one machine, as a lab deploys it: each machine in a network namespace of its own
(`unshare -n`, root), all on one bridge in a further namespace that is also the stranger's, a host on the
lab's network with no key of the lab. Addresses are in 10.77.0.0/24 inside these namespaces only; this
machine's own network is never touched. What answers a stranger is listed by connecting to every TCP
port of every machine (`python -m thermrig.lab_world.stranger`) and named with `ss` in the machine's
namespace."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from thermrig.lab_world.world import LabWorldError, Proc

SUBNET = "10.77.0"


@dataclass
class Machine:
    """A namespace holding one machine's network: its address on the lab's bridge and its loopback."""

    name: str
    address: str
    holder: subprocess.Popen[bytes]
    procs: list[Proc] = field(default_factory=list)

    def argv(self, cmd: list[str]) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.holder.pid}/ns/net", "--", *cmd]

    def run(self, cmd: list[str], timeout: float = 60, check: bool = True, **kw: object) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(cmd), capture_output=True, text=True, timeout=timeout, check=check, **kw)  # type: ignore[call-overload]

    def start(self, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> Proc:
        """A service of this machine, stopped with the network."""
        proc = Proc.start(self.argv(cmd), cwd, env)
        self.procs.append(proc)
        return proc

    def listening(self) -> dict[int, str]:
        """TCP port -> "process (pid N)" of what listens here beyond loopback (ss in this namespace)."""
        out = self.run(["ss", "-ltnpH"]).stdout
        found: dict[int, str] = {}
        for line in out.splitlines():
            parts = line.split()
            local = parts[3]
            host, _, port = local.rpartition(":")
            if host.strip("[]").startswith(("127.", "::1")):
                continue
            who = re.search(r'"([^"]+)",pid=(\d+)', line)
            found[int(port)] = f"{who.group(1)} (pid {who.group(2)})" if who else "?"
        return found


def _namespace() -> subprocess.Popen[bytes]:
    holder = subprocess.Popen(["unshare", "-n", "sleep", "infinity"], stdin=subprocess.DEVNULL)
    for _ in range(200):
        try:
            if Path(f"/proc/{holder.pid}/ns/net").resolve() != Path("/proc/self/ns/net").resolve():
                probe = subprocess.run(["readlink", f"/proc/{holder.pid}/exe"], capture_output=True, text=True)
                if probe.stdout.strip().endswith("sleep"):
                    return holder
        except OSError:
            pass
        subprocess.run(["sleep", "0.05"])
    holder.kill()
    raise LabWorldError("unshare -n did not give a network namespace (it needs root)")


@dataclass
class LabNetwork:
    stranger: Machine
    machines: dict[str, Machine] = field(default_factory=dict)

    def add(self, name: str) -> Machine:
        """A machine on the lab's bridge at the next address."""
        n = len(self.machines) + 2
        machine = Machine(name, f"{SUBNET}.{n}", _namespace())
        self.machines[name] = machine
        machine.run(["ip", "link", "set", "lo", "up"])
        self.stranger.run(["ip", "link", "add", f"p{n}", "type", "veth", "peer", "name", "eth0", "netns",
                           str(machine.holder.pid)])  # fmt: skip
        self.stranger.run(["ip", "link", "set", f"p{n}", "master", "br0", "up"])
        machine.run(["ip", "addr", "add", f"{machine.address}/24", "dev", "eth0"])
        machine.run(["ip", "link", "set", "eth0", "up"])
        return machine

    def answering(self, machine: Machine) -> list[int]:
        """The TCP ports of the machine a stranger's connection is accepted on."""
        out = self.stranger.run([sys.executable, "-m", "thermrig.lab_world.stranger", machine.address], timeout=300)
        return [int(p) for p in out.stdout.split()]

    def audit(self, allowed: dict[str, object]) -> list[str]:
        """What answers a stranger and is not allowed: "MACHINE ADDRESS:PORT PROCESS". allowed: process name
        -> a predicate on (machine, port) that says the door is shut (sshd: always; influxd: auth on)."""
        found = []
        for machine in self.machines.values():
            listening = machine.listening()
            for port in self.answering(machine):
                who = listening.get(port, "?")
                judge = allowed.get(who.split(" (")[0])
                if judge is None or not judge(machine, port):  # type: ignore[operator]
                    found.append(f"{machine.name} {machine.address}:{port} {who}")
        return found

    def stop(self) -> None:
        for machine in [*self.machines.values(), self.stranger]:
            for proc in machine.procs:
                proc.stop()
            machine.holder.kill()
            machine.holder.wait()


@contextmanager
def lab_network() -> Iterator[LabNetwork]:
    """The stranger's namespace with the lab's bridge at .1; machines added with add()."""
    stranger = Machine("stranger", f"{SUBNET}.1", _namespace())
    net = LabNetwork(stranger)
    try:
        stranger.run(["ip", "link", "set", "lo", "up"])
        stranger.run(["ip", "link", "add", "br0", "type", "bridge"])
        stranger.run(["ip", "addr", "add", f"{stranger.address}/24", "dev", "br0"])
        stranger.run(["ip", "link", "set", "br0", "up"])
        yield net
    finally:
        net.stop()
