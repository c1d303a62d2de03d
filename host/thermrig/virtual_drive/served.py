"""VirtualDrive: the drive model served to the real fio as a block device over NBD (fio's `nbd` engine,
`uri=nbd+unix:///?socket=PATH`).

Every request carries its offset and length, so the model sees what a real drive sees: fill by LBA,
TRIM, sequential streams. Each request's reply leaves when the model's pipeline completes it: no
sooner than its QD1 service time after it arrived, and no faster than the current power state's
throughput (docs/virtual-drive.md). `scale` multiplies every rate on the wire (bandwidth and IOPS, so
latencies are divided by it), for what this machine cannot serve at the drive's own speed; the model
counts each wire request as 1 / scale of the drive's, so power, heat, times and ratios are unaffected.
Reads return zeros: no data is stored."""

from __future__ import annotations

import math
import os
import tempfile
import threading

from thermrig.hardware.drive_profiles import DriveProfile
from thermrig.virtual_drive import nbd_protocol as nbd
from thermrig.virtual_drive.drive_model import DriveModel
from thermrig.virtual_drive.nbd_server import NbdServer

CATCH_UP_S = 0.5  # how long an idle pipeline keeps its place: host stalls this short cost no throughput


class VirtualDrive:
    def __init__(self, profile: DriveProfile, scale: float = 1.0) -> None:
        if not 0 < scale <= 1:
            raise ValueError(f"wire scale {scale} must be in (0, 1]")
        self.model = DriveModel(profile)
        self.scale = scale
        self.size = profile.capacity_bytes
        self._lock = threading.Lock()  # the model between the server's threads and the plant's tick
        self._free_at = -math.inf  # wire time at which the drive's pipeline can take the next request
        self._dir = tempfile.mkdtemp(prefix="thermrig-drive-")
        self.socket_path = os.path.join(self._dir, "nbd.sock")
        self.server = NbdServer(self, self.socket_path)

    @property
    def uri(self) -> str:
        return f"nbd+unix:///?socket={self.socket_path}"

    # --- the NBD server's backend -------------------------------------------------------------------

    def submit(self, cmd: int, offset: int, length: int, now: float, turnaround: float = 0.0) -> float:
        """A valid request arrived at `now` (monotonic): do its work in the model and return when it
        completes on the wire. The wire's own turnaround (Python and fio between a reply and the next
        request, far above a real host's microseconds) is taken off the latency, never below zero, so
        queue-depth-bound rates stay those of the drive."""
        with self._lock:
            if cmd == nbd.CMD_FLUSH:  # no volatile cache to write back
                return now
            if cmd in (nbd.CMD_TRIM, nbd.CMD_WRITE_ZEROES):  # zeroes: deallocated LBAs read as zeros
                service = self.model.trim(offset, length)
            else:
                service = self.model.serve(cmd == nbd.CMD_WRITE, offset, length, 1.0 / self.scale)
            # A pipeline that fell idle less than CATCH_UP_S ago keeps its place: requests a loaded
            # host delivered late are served at the drive's pace, not lost (a token bucket's burst,
            # bounded by the queue depth); one idle for longer starts afresh.
            start = self._free_at if now - self._free_at < CATCH_UP_S else now
            self._free_at = start + service.occupancy / self.scale
            return max(now + max(0.0, service.latency / self.scale - turnaround), self._free_at)

    # --- the plant side ------------------------------------------------------------------------------

    def tick(self, dt: float, ctrl_c: float, board_c: float) -> float:
        """Once per plant tick, before the plant steps: the work served in the last dt seconds sets the
        drive's power (returned, W), and the model re-evaluates its throttle at the controller's and
        the board's temperatures."""
        with self._lock:
            return self.model.tick(dt, ctrl_c, board_c)

    def idle(self) -> None:
        """Between workloads: the pipeline forgets any backlog and any place it kept."""
        with self._lock:
            self._free_at = -math.inf

    def close(self) -> None:
        self.server.close()
        os.rmdir(self._dir)
