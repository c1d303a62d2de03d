"""VirtualDrive: the drive model served to the real fio (or any NBD client) as a block device by nbdkit,
with the project's plugin (firmware/sim/nbdkit/thermrig_drive.c) as its data path, on a Unix socket
(fio's `nbd` engine: `uri=nbd+unix:///?socket=PATH`).

Each plant tick the model reads the work the plugin did (busy time per direction, bytes, fresh NAND),
steps its power and throttle, and writes the figures the plugin times the next requests by: the power
state's caps, the fill's garbage-collection rate, the wire scale (exchange.py). The plugin holds each
request until the drive's pipeline completes it: no sooner than its QD1 service time after it arrived,
and no faster than the power state's throughput (docs/virtual-drive.md). `scale` multiplies every rate
on the wire (bandwidth and IOPS, so latencies are divided by it); each wire request counts as 1 / scale
of the drive's, so power, heat, times and ratios are unaffected. With `keep_data` (bytes, at most) the
drive keeps what is written in a sparse file in its folder (data_store.py); without, reads return zeros
and written data is dropped."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from thermrig.children import stop_child
from thermrig.errors import ThermrigError
from thermrig.hardware.drive_profiles import DriveProfile
from thermrig.priority import in_world
from thermrig.settings import find_tool
from thermrig.virtual_drive.data_store import DataStore
from thermrig.virtual_drive.drive_model import DriveModel
from thermrig.virtual_drive.exchange import Accounts, Exchange, Figures, SharedLbaMap

# While requests are in flight, a pipeline the host left short (a loaded machine delivering requests
# late) restarts at most this far behind the wire clock; with nothing in flight it starts afresh. Half a
# second: a host stall that short costs the drive no throughput (at 50 ms, two busy cores made fio see
# 10 % dips that the analysis read as throttle onsets 5-15 s early; docs/virtual-drive.md).
CATCH_UP_S = 0.5
THREADS = 32  # nbdkit threads per connection: requests in flight per client, sleeping to their completion
START_TIMEOUT_S = 30.0


class DriveServerError(ThermrigError, RuntimeError):
    """The virtual drive's server did not start, or exited while it was serving."""


def plugin_path() -> Path:
    """The nbdkit plugin: $THERMRIG_DRIVE_PLUGIN, else the repository's build (`make build`)."""
    return find_tool("drive-plugin")


class VirtualDrive:
    def __init__(self, profile: DriveProfile, scale: float = 1.0, keep_data: int = 0) -> None:
        if not 0 < scale <= 1:
            raise ValueError(f"wire scale {scale} must be in (0, 1]")
        if keep_data < 0:
            raise ValueError(f"keep_data {keep_data} must be 0 (drop written data) or a size in bytes")
        self.scale = scale
        self.size = profile.capacity_bytes
        self._dir = Path(tempfile.mkdtemp(prefix="thermrig-drive-"))
        self.socket_path = str(self._dir / "nbd.sock")
        self.exchange = Exchange(self._dir / "exchange", profile.capacity_bytes)
        self.store: DataStore | None = None
        if keep_data:
            self.store = DataStore(self._dir / "data", profile.capacity_bytes, keep_data).create()
        on_clear = self.store.discard if self.store is not None else None
        self.model = DriveModel(profile, SharedLbaMap(self.exchange, profile.capacity_bytes, on_clear))
        self._reset = 0
        self._lock = threading.Lock()  # the model and the figures, between the plant's tick and the others
        self._last = self.exchange.accounts()
        self._publish()
        self.proc: subprocess.Popen[bytes] | None = None
        self.failure: str | None = None  # why the server stopped serving, once it has

    @property
    def uri(self) -> str:
        return f"nbd+unix:///?socket={self.socket_path}"

    def __enter__(self) -> VirtualDrive:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Run nbdkit with the plugin; returns once it accepts connections. nbdkit exits with the thread
        that started it (--exit-with-parent), so start the drive from the thread that owns it."""
        plugin = plugin_path()
        if not plugin.exists():
            raise DriveServerError(f"{plugin} is missing: build it with `make build` (or set THERMRIG_DRIVE_PLUGIN)")
        if not find_tool("nbdkit").exists():
            raise DriveServerError("nbdkit is not installed (Debian: nbdkit; `make setup` installs it)")
        pidfile = self._dir / "nbdkit.pid"
        for stale in (pidfile, Path(self.socket_path)):  # a server that died left them
            stale.unlink(missing_ok=True)
        cmd = [
            str(find_tool("nbdkit")),
            "--foreground",
            "--exit-with-parent",
            "--unix",
            self.socket_path,
            "--pidfile",
            str(pidfile),
        ]
        cmd += ["--threads", str(THREADS), str(plugin), f"shm={self.exchange.path}"]
        cmd += self.store.plugin_args() if self.store is not None else []
        with open(self._dir / "nbdkit.log", "ab") as log:
            self.proc = subprocess.Popen(in_world(cmd), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not pidfile.exists():  # nbdkit writes it once it accepts connections
            if self.proc.poll() is not None:
                raise DriveServerError(f"nbdkit did not start: {self._log_tail()}")
            if time.monotonic() > deadline:
                self.close()
                raise DriveServerError(f"nbdkit did not start within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.01)

    # --- the plant side ------------------------------------------------------------------------------

    def tick(self, dt: float, ctrl_c: float, board_c: float) -> float:
        """Once per plant tick, before the plant steps: the work the plugin served in the last dt
        seconds sets the drive's power (returned, W), the model re-evaluates its throttle at the
        controller's and the board's temperatures, and the plugin gets the figures that follow."""
        with self._lock:
            self._collect()
            power = self.model.tick(dt, ctrl_c, board_c)
            self._publish()
        self.poll()
        return power

    def collect(self) -> DriveModel:
        """The model with every request served so far counted (it counts them each tick anyway)."""
        with self._lock:
            self._collect()
        return self.model

    def _collect(self) -> None:
        now = self.exchange.accounts()
        last, self._last = self._last, now
        self.model.absorb(
            now.busy_read - last.busy_read,
            now.busy_write - last.busy_write,
            now.bytes_read - last.bytes_read,
            now.bytes_written - last.bytes_written,
            now.fresh - last.fresh,
        )

    def poll(self) -> str | None:
        """Why the server stopped serving (nbdkit exited), or None while it serves."""
        if self.failure is None and self.proc is not None and (status := self.proc.poll()) is not None:
            self.failure = f"the virtual drive's server (nbdkit) exited with status {status}: {self._log_tail()}"
        return self.failure

    def restart(self) -> None:
        """After the server died: a new nbdkit on the same socket and exchange file (the drive's state,
        fill and counts are in the file; the pipeline starts afresh). From the thread that started it."""
        if self.proc is not None and self.proc.poll() is None:
            raise DriveServerError("the virtual drive's server is still running")
        self.failure = None
        self.idle()
        self.start()

    def check(self) -> None:
        if (failure := self.poll()) is not None:
            raise DriveServerError(failure)

    def accounts(self) -> Accounts:
        """The plugin's counters as of now (tests, bench)."""
        return self.exchange.accounts()

    def refused(self) -> str | None:
        """Why writes were refused (the data store at its cap), in one line; None while none were."""
        n = self.exchange.accounts().refused_writes
        if n == 0 or self.store is None:
            return None
        return (
            f"the virtual drive's data store is full ({self.store.kept_bytes() / 2**30:.2f} GiB kept, its cap "
            f"{self.store.cap / 2**30:.2f} GiB): {n} writes refused with ENOSPC; keep more (keep_data) or trim"
        )

    def idle(self) -> None:
        """Between workloads: the pipeline forgets any backlog, the streams their place."""
        with self._lock:
            self._reset += 1
            self._publish()

    def publish(self) -> None:
        """Hand the plugin the model's figures now (after a change between ticks: a fill, a format)."""
        with self._lock:
            self._publish()

    def _publish(self) -> None:
        m, p = self.model, self.model.profile
        fig = Figures(
            scale=self.scale,
            rand_read_iops=p.rand_read_iops,
            seq_read_bps=p.seq_read_bps,
            qd1_read_iops=p.qd1_rand_read_iops,
            rand_write_iops=p.rand_write_iops,
            gc_write_iops=m.gc_write_iops(),
            seq_write_bps=m.write_bps(),  # the post-cache rate once an SLC cache is full
            qd1_write_iops=p.qd1_rand_write_iops,
            cap_read=m.cap_fraction(False),
            cap_write=m.cap_fraction(True),
            catch_up_s=CATCH_UP_S,
            steady=int(m.is_steady_state),
            reset=self._reset,
        )
        self.exchange.write_figures(fig)

    def _log_tail(self) -> str:
        try:
            lines = (self._dir / "nbdkit.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return lines[-1] if lines else "no message"

    def close(self) -> None:
        if self.proc is not None:
            stop_child(self.proc)
        shared = self.model.lba
        if isinstance(shared, SharedLbaMap):  # the model stays readable: its map becomes a plain copy
            self.model.lba = shared.snapshot()
            shared.release()
            self.exchange.close()
        shutil.rmtree(self._dir, ignore_errors=True)
