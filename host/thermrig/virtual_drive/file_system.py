"""A file system on the virtual drive, mounted through the kernel, for workloads on files (fio on a file,
a database): the drive's export as a file through FUSE (libnbd's nbdfuse, the drive's NBD URI), a loop
device on that file with direct I/O (so the loop device adds no page cache of its own: reads and writes
that miss the file system's cache reach the drive), `mkfs.ext4` on it, and a mount. The kernel's own NBD
client (nbd-client, qemu-nbd -c) is the shorter path where the nbd module can be loaded; in a container
it usually cannot, while FUSE and loop devices often work (both need root here). The drive must keep
what is written (keep_data), or the file system is lost as it is written."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from thermrig.errors import ThermrigError
from thermrig.priority import in_world

START_TIMEOUT_S = 30.0
# mkfs.ext4 on a 512 GB export: no discard (a TRIM of the whole drive), inode tables and journal not
# written (lazy_itable_init, and noinit_itable at the mount: the kernel does not zero them in the
# background either, 8 GiB of inode tables on 512 GB that would reach the drive during a campaign):
# about 10 MiB written, not GiB.
MKFS = ["mkfs.ext4", "-q", "-F", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1"]


class FileSystemError(ThermrigError, RuntimeError):
    """The file system on the virtual drive could not be made or mounted."""


def _run(cmd: list[str], what: str) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except FileNotFoundError as exc:
        raise FileSystemError(f"{what}: {cmd[0]} is not installed") from exc
    if r.returncode != 0:
        words = (r.stderr.strip().splitlines() or [f"status {r.returncode}"])[-1]
        raise FileSystemError(f"{what}: {' '.join(cmd[:2])} failed: {words}")
    return r.stdout.strip()


class DriveFileSystem:
    """ext4 on the drive at `uri`, mounted at `folder`/mnt while open (start() ... close(), or `with`).
    `make`: mkfs first (a new file system); otherwise the one on the drive is mounted."""

    def __init__(self, uri: str, folder: Path, make: bool = True) -> None:
        self.uri = uri
        self.folder = folder
        self.make = make
        self.mountpoint = folder / "mnt"
        self._fuse = folder / "fuse"
        self._nbdfuse: subprocess.Popen[bytes] | None = None
        self._loop: str | None = None
        self._mounted = False

    def __enter__(self) -> DriveFileSystem:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> DriveFileSystem:
        if os.geteuid() != 0:
            raise FileSystemError("a file system on the virtual drive needs root (FUSE, a loop device, mount)")
        if shutil.which("nbdfuse") is None:
            raise FileSystemError("nbdfuse is not installed (Debian: libnbd-bin; `make setup` installs it)")
        self._fuse.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        pidfile, export = self.folder / "nbdfuse.pid", self._fuse / "drive"
        pidfile.unlink(missing_ok=True)
        log = open(self.folder / "nbdfuse.log", "ab")  # noqa: SIM115 - the child holds it
        with log:
            self._nbdfuse = subprocess.Popen(
                in_world(["nbdfuse", "-P", str(pidfile), str(export), self.uri]),  # the kernel's client, standing in
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not pidfile.exists():  # nbdfuse writes it once the export is a file
            if self._nbdfuse.poll() is not None or time.monotonic() > deadline:
                tail = (self.folder / "nbdfuse.log").read_text(errors="replace").strip().splitlines()
                raise FileSystemError(
                    f"nbdfuse did not serve the drive as a file: {tail[-1] if tail else 'no message'}"
                )
            time.sleep(0.02)
        self._loop = _run(["losetup", "-f", "--show", "--direct-io=on", str(export)], "a loop device on the drive")
        if self.make:
            _run([*MKFS, self._loop], "mkfs.ext4 on the virtual drive")
        mount = ["mount", "-t", "ext4", "-o", "noinit_itable", self._loop, str(self.mountpoint)]
        _run(mount, "mounting the virtual drive's file system")
        self._mounted = True

    def close(self) -> None:
        """Unmount (what is written reaches the drive first), free the loop device, end nbdfuse."""
        if self._mounted:
            subprocess.run(["umount", str(self.mountpoint)], capture_output=True, timeout=300)
            self._mounted = False
        if self._loop is not None:
            subprocess.run(["losetup", "-d", self._loop], capture_output=True, timeout=60)
            self._loop = None
        if self._nbdfuse is not None:
            if self._nbdfuse.poll() is None:
                subprocess.run(["umount", str(self._fuse)], capture_output=True, timeout=60)  # nbdfuse then exits
                try:
                    self._nbdfuse.wait(30)
                except subprocess.TimeoutExpired:
                    self._nbdfuse.terminate()
                    self._nbdfuse.wait(30)
            self._nbdfuse = None
