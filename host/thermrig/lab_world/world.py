"""A simulated lab on one machine: a labgrid coordinator, the lab's InfluxDB (authentication on, when
sealed) and exporters on loopback, each exporter serving a simulated rig's pty (re-exported over ser2net
RFC 2217 while its place is acquired), and each place's test PC a fio server and an OpenSSH server on
loopback. `thermrig lab demo` runs a campaign on it; the lab
tests build theirs from it. Every process runs in its own session and its whole group is killed at the
end: nothing outlives the lab."""

from __future__ import annotations

import getpass
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

from thermrig.children import wait_for, with_default_sigint
from thermrig.db.local_server import free_port
from thermrig.dut.pacing import Pacing
from thermrig.errors import ThermrigError
from thermrig.lab.client import Endpoint, LabClient
from thermrig.lab.remote_fio import fio_answers
from thermrig.lab.rig_place import RigPlace, SerialPort, TestPc, exporter_yaml
from thermrig.lab.test_pc_drive import VIRTUAL_DRIVE_SOCKET
from thermrig.lab_world.influx import LabInflux, lab_influx
from thermrig.priority import in_world
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

# A rig of a simulated lab that campaigns run on: real time (fio's timing true) and a virtual drive in
# its "test PC", each place's its own.
CAMPAIGN_RIG = SimConfig(pacing=Pacing.accelerated(1.0), drive="950pro_512", drive_scale=0.05)

PLACES = ("rig-a", "rig-b", "rig-c")
TAGS = {"board": "sim", "drive": "950pro_512", "slot": "top"}  # every place fixes the slot: no operator prompt


def campaign(
    folder: Path, name: str, coordinator: str, runs: int, runtime_s: int = 2, ssh_key: str = "", insecure: bool = False
) -> Path:
    """A campaign of `runs` short runs on the lab's places tagged board=sim, its drive each test PC's
    virtual drive; equilibrium and cool-down judged loosely (the rigs run at real time). insecure: fio's
    servers reached straight, not through SSH forwards."""
    path = folder / f"{name}.toml"
    path.write_text(f"""
[campaign]
name = "{name}"
seed = 5
repeats = {runs}
baseline_s = 1

[lab]
coordinator = "{coordinator}"
tags = {{ board = "sim" }}
ssh_key = "{ssh_key}"
insecure = {str(insecure).lower()}

[drive]
target = "virtual"
scale = 0.05

[equilibrium]
rate_c_per_min = 100.0
window_s = 2
timeout_s = 4

[cooldown]
margin_c = 50.0
timeout_s = 4

[factors]
slot = ["top"]
profile = ["single_gpu_load"]

[[workload]]
name = "sw"
kind = "seq_write"
runtime_s = {runtime_s}
""")
    return path


BIN = Path(sys.executable).parent
# thermrig's ser2net wrapper (docs/lab.md): the ser2net an exporter starts listens on loopback only
SER2NET_LOOPBACK = Path(__file__).resolve().parents[3] / "scripts" / "lab"


class LabWorldError(ThermrigError):
    """A part of the simulated lab did not come up."""


def expect(ready: bool, what: str) -> None:
    if not ready:
        raise LabWorldError(what)


@dataclass
class Proc:
    """A child in its own session whose output is collected by a thread (the coordinator prints a lot)."""

    popen: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> Proc:
        """Started with SIGINT's default disposition, which the tests' Ctrl-C needs (interruptible.py)."""
        popen = subprocess.Popen(
            with_default_sigint(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
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
    fio_servers: dict[str, Proc] = field(default_factory=dict)  # place -> its test PC's fio server
    ssh_servers: dict[str, Proc] = field(default_factory=dict)  # place -> its test PC's sshd
    ssh_key: str = ""  # the campaign machine's key, which every simulated test PC takes
    sealed: bool = True  # exporters --isolated, their ser2net on loopback (reached through the test PC's SSH)
    influx: LabInflux | None = None  # the sealed lab's InfluxDB, authentication on
    stopping: threading.Event = field(default_factory=threading.Event)  # ends the smart-log writers

    def restart_coordinator(self) -> None:
        """The coordinator stopped and started again on its address, in its folder (its places.yaml kept):
        what labgrid loses then is who holds which place."""
        self.coordinator.stop()
        folder = self.folder / "coordinator"
        self.coordinator = Proc.start([str(BIN / "labgrid-coordinator"), "--listen", self.address], folder)
        listening = wait_for(lambda: any(x.startswith("listening on ") for x in self.coordinator.lines), 60)
        expect(listening, f"the coordinator did not listen again:\n{self.coordinator.output()}")

    def start_exporter(self, name: str, resources: Path, group: str) -> Proc:
        isolated = ["--isolated"] if self.sealed else []
        cmd = [str(BIN / "labgrid-exporter"), *isolated, "-c", self.address, "-n", name, "--hostname", "127.0.0.1",
               str(resources)]  # fmt: skip
        path = os.environ.get("PATH", "/usr/bin:/bin")
        env = {**os.environ, "PATH": f"{SER2NET_LOOPBACK}:{path}" if self.sealed else path}
        proc = self.exporters[name] = Proc.start(cmd, self.folder, env)
        with LabClient(self.address) as client:

            def published() -> bool:
                client.sync()
                return bool(client.session.resources.get(name, {}).get(group))

            expect(wait_for(published, 60), f"exporter {name} never published {group}:\n{proc.output()}")
        return proc

    def start_fio_server(self, place: str) -> Proc:
        """The place's test PC's fio server, in the test PC's own folder, where its virtual drive (the rig's,
        served over NBD) is at VIRTUAL_DRIVE_SOCKET: what a campaign's target "virtual" reaches there."""
        folder = self.folder / f"testpc-{place}"
        folder.mkdir(exist_ok=True)
        drive = self.rigs[place].drive
        link = folder / VIRTUAL_DRIVE_SOCKET
        if drive is not None and not link.is_symlink():
            link.symlink_to(drive.socket_path)
        port = self.ports[place][0]
        proc = self.fio_servers[place] = Proc.start(in_world(["fio", f"--server=ip:127.0.0.1,{port}"]), folder)
        answers = wait_for(lambda: fio_answers(Endpoint("127.0.0.1", port), 1) is None, 30)
        expect(answers, f"the fio server of {place} did not answer:\n{proc.output()}")
        return proc

    def start_test_pc_ssh(self, place: str) -> Proc:
        """The test PC's SSH: OpenSSH's sshd on its port taking the lab's key, every command run with the
        test PC's bin folder first on PATH, where `nvme` prints the virtual drive's smart-log (written
        there twice a second) and `sudo -n` runs what follows, and with the test PC's own temporary folder
        (TMPDIR: its tmp/, not the machine's /tmp)."""
        folder = self.folder / f"testpc-{place}"
        bin_dir = folder / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        (folder / "tmp").mkdir(exist_ok=True)
        smart = folder / "smart.json"
        (bin_dir / "nvme").write_text(f'#!/bin/sh\n[ "$1 $2 $3" = "smart-log -o json" ] || exit 2\ncat {smart}\n')
        (bin_dir / "sudo").write_text('#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
        for tool in ("nvme", "sudo"):
            (bin_dir / tool).chmod(0o755)
        drive = self.rigs[place].drive
        assert drive is not None

        def write_smart() -> None:
            while not self.stopping.is_set():
                tmp = smart.with_suffix(".tmp")
                tmp.write_text(drive.model.smart_log_json())
                tmp.replace(smart)
                self.stopping.wait(0.5)

        if not smart.exists():
            threading.Thread(target=write_smart, daemon=True).start()
            expect(wait_for(smart.exists, 10), f"no smart-log written for {place}")
        if not self.ssh_key:
            key = self.folder / "campaign_key"
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
            self.ssh_key = str(key)
        (folder / "authorized_keys").write_text(Path(self.ssh_key + ".pub").read_text())
        force = f'TMPDIR={folder / "tmp"} PATH={bin_dir}:/usr/bin:/bin exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"'
        options = {"AuthorizedKeysFile": str(folder / "authorized_keys"), "StrictModes": "no", "ForceCommand": force}
        proc = ssh_server(folder, self.ports[place][1], options)
        self.ssh_servers[place] = proc
        return proc

    def add_place(self, name: str, tags: dict[str, str]) -> None:
        """A place for a rig of this lab, its test PC a fio server and an SSH server on free ports,
        registered on the coordinator and exported."""
        self.ports[name] = (free_port(), free_port())
        self.start_fio_server(name)
        self.start_test_pc_ssh(name)
        test_pc = TestPc("127.0.0.1", getpass.getuser(), *self.ports[name])
        place = RigPlace(name, SerialPort(str(self.rigs[name].port)), test_pc, tags)
        path = self.folder / f"{name}.yaml"
        path.write_text(exporter_yaml(place))
        with LabClient(self.address) as client:
            client.ensure_place(name, place.match_pattern(f"exp-{name}"), place.clean_tags())
        self.start_exporter(f"exp-{name}", path, name)


def ssh_server(
    folder: Path,
    port: int,
    options: dict[str, str] | None = None,
    listen: str = "127.0.0.1",
    start: Callable[[list[str], Path], Proc] = Proc.start,
) -> Proc:
    """OpenSSH's sshd on a port of `listen` (loopback; a lab machine's: 0.0.0.0 in its namespace, started by
    `start`) with a host key of its own (a test PC's SSH), in the foreground, listening; stop() it. Keys
    only: no password is asked."""
    sshd = Path("/usr/sbin/sshd")
    if not sshd.exists():
        raise LabWorldError("sshd is missing: install Debian's openssh-server (scripts/setup_system.sh does)")
    if not Path("/run/sshd").is_dir():  # its privilege separation directory, which its service unit makes
        Path("/run/sshd").mkdir(mode=0o755)
    key = folder / f"ssh_host_{port}"
    if not key.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    extra = [a for k, v in (options or {}).items() for a in ("-o", f"{k}={v}")]
    cmd = [str(sshd), "-D", "-e", "-f", "/dev/null", "-h", str(key), "-p", str(port),
           "-o", f"ListenAddress={listen}", "-o", "PidFile=none", "-o", "PasswordAuthentication=no",
           "-o", "KbdInteractiveAuthentication=no", *extra]  # fmt: skip
    proc = start(cmd, folder)
    try:
        listening = wait_for(lambda: any("Server listening" in line for line in proc.lines), 30)
        expect(listening, f"sshd did not listen:\n{proc.output()}")
    except BaseException:
        proc.stop()
        raise
    return proc


@contextmanager
def coordinator(folder: Path) -> Iterator[tuple[str, Proc]]:
    folder.mkdir(parents=True, exist_ok=True)
    proc = Proc.start([str(BIN / "labgrid-coordinator"), "--listen", "127.0.0.1:0"], folder)
    try:

        def listening() -> bool:
            return any(re.match(r"listening on 127\.0\.0\.1:\d+$", line) for line in proc.lines)

        expect(wait_for(listening, 60), f"the coordinator did not listen:\n{proc.output()}")
        line = next(x for x in proc.lines if x.startswith("listening on "))
        yield line.removeprefix("listening on "), proc
    finally:
        proc.stop()


@contextmanager
def simulated_lab(
    folder: Path, names: list[str], rig: SimConfig | None = None, sealed: bool = True, influx_server: int = 1
) -> Iterator[Lab]:
    """A coordinator and a free-running simulated rig per name (rig: their configuration); the exporters
    and test PCs that tests add are stopped at the end. sealed: exporters isolated (serial through SSH) and
    the lab's InfluxDB with authentication on (lab.influx; influx_server: 1.x or 2.x)."""
    with ExitStack() as stack:
        address, proc = stack.enter_context(coordinator(folder / "coordinator"))
        influx = stack.enter_context(lab_influx(folder / "influxdb", influx_server)) if sealed else None
        lab = Lab(address, folder, proc, sealed=sealed, influx=influx)
        for name in names:
            config = replace(rig or SimConfig(), seed=len(lab.rigs) + 1)
            lab.rigs[name] = stack.enter_context(SimulatedRig(config))
        try:
            yield lab
        finally:
            for exporter in lab.exporters.values():
                exporter.stop()
            lab.stopping.set()
            for server in [*lab.fio_servers.values(), *lab.ssh_servers.values()]:
                server.stop()
            lab.coordinator.stop()  # a coordinator restarted by a test is not the one the context started
