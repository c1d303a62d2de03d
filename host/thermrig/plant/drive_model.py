"""The virtual drive's firmware, as far as heat goes: power from the work it does, a thermal throttle
that walks NVMe power states on the controller's temperature, a composite sensor on the NAND side,
thermal-management counters and the fill state that sets random-write speed (docs/virtual-drive.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from thermrig.plant.drive_profiles import DriveProfile

KELVIN = 273.15


@dataclass(frozen=True)
class Pattern:
    """What the host is doing, as the drive's FTL sees it from the LBAs (the net engine carries only
    bytes, so the agent announces it)."""

    write: bool
    random: bool
    bs: int  # bytes per request

    def describe(self) -> str:
        return f"{'random' if self.random else 'sequential'} {'write' if self.write else 'read'} {self.bs} B"


class DriveModel:
    def __init__(self, profile: DriveProfile) -> None:
        self.profile = profile
        self.pattern: Pattern | None = None
        self.state = 0  # index into profile.states: 0 full speed, last = heavy throttle
        self.ctrl_c = 25.0  # last controller temperature seen
        self.composite_c = 25.0
        self.power_w = profile.idle_power_w
        self.rate = 0.0  # bytes/s the host moved over the last tick (drive scale, not wire scale)
        self.filled = 0.0  # bytes of LBA space written since the last format
        self.spare_used = 0.0  # bytes of random overwrite of a full drive, against the spare area
        self.bytes_read = 0.0
        self.bytes_written = 0.0
        self.tmt1_count = self.tmt2_count = 0
        self.tmt1_time = self.tmt2_time = 0.0
        self.warning_time = 0.0  # seconds above WCTEMP (never, when the drive reports none)
        self._since_step = 0.0
        self.transitions: list[tuple[float, int]] = []  # (drive uptime s, new state), for the log
        self.uptime = 0.0

    # --- what the host can get ----------------------------------------------------------------------

    def peak_rate(self) -> float:
        """Bytes/s at full speed for the current pattern and fill state."""
        p, pat = self.profile, self.pattern
        if pat is None:
            return 0.0
        if not pat.random:
            return p.seq_write_bps if pat.write else p.seq_read_bps
        if not pat.write:
            return min(p.rand_read_iops * pat.bs, p.seq_read_bps)
        iops = p.rand_write_iops if not self.is_steady_state else p.steady_rand_write_iops
        return min(iops * pat.bs, p.seq_write_bps)

    @property
    def is_steady_state(self) -> bool:
        """Full and the spare area used up: random writes wait for garbage collection."""
        p = self.profile
        return self.filled >= p.capacity_bytes and self.spare_used >= p.spare_bytes

    def active_power_w(self) -> float:
        pat = self.pattern
        return self.profile.write_power_w if pat is not None and pat.write else self.profile.read_power_w

    def cap_fraction(self) -> float:
        """Throughput cap of the current power state: the share of the active power it allows."""
        p = self.profile
        span = self.active_power_w() - p.idle_power_w
        if span <= 0:
            return 1.0
        return max(0.0, min(1.0, (p.states[self.state].max_w - p.idle_power_w) / span))

    def cap_rate(self) -> float:
        return self.peak_rate() * self.cap_fraction()

    # --- one tick -----------------------------------------------------------------------------------

    def tick(self, dt: float, ctrl_c: float, board_c: float, moved: float) -> float:
        """Account for `moved` bytes over the last dt seconds, re-evaluate the throttle, and return the
        power the drive dissipates over the next tick."""
        p = self.profile
        self.uptime += dt
        self.ctrl_c = ctrl_c
        self.composite_c = board_c + p.composite_offset_c
        self.rate = moved / dt if dt > 0 else 0.0
        self._account(moved)
        effort = self.rate / self.peak_rate() if self.peak_rate() > 0 else 0.0
        self.power_w = p.idle_power_w + (self.active_power_w() - p.idle_power_w) * min(1.0, effort)
        if self.state == len(p.states) - 1:
            self.tmt2_time += dt
        elif self.state > 0:
            self.tmt1_time += dt
        self._since_step += dt
        if self._since_step >= p.step_s - 1e-9:
            self._since_step = 0.0
            self._step_throttle()
        return self.power_w

    def _account(self, moved: float) -> None:
        pat = self.pattern
        if pat is None or moved <= 0:
            return
        if not pat.write:
            self.bytes_read += moved
            return
        self.bytes_written += moved
        cap = self.profile.capacity_bytes
        if pat.random and self.filled >= cap:
            self.spare_used += moved
        else:
            self.filled = min(cap, self.filled + moved)

    def _step_throttle(self) -> None:
        p = self.profile
        last = len(p.states) - 1
        t = self.ctrl_c
        new = self.state
        if t >= p.tmt2_c:
            new = last
        elif t >= p.tmt1_c:
            new = min(self.state + 1, last)
        elif t < p.tmt1_c - p.hysteresis_c:
            new = max(self.state - 1, 0)
        if new == self.state:
            return
        if new == last:
            self.tmt2_count += 1
        elif self.state == 0:
            self.tmt1_count += 1
        self.state = new
        self.transitions.append((self.uptime, new))

    # --- host-side controls -------------------------------------------------------------------------

    def format(self) -> None:
        """`nvme format`: every LBA unmapped, the spare area free again."""
        self.filled = self.spare_used = 0.0

    def precondition(self) -> None:
        """As if filled and then randomly overwritten past the spare area (SNIA steady state), so a
        test does not have to move the whole capacity through the wire first."""
        self.filled = float(self.profile.capacity_bytes)
        self.spare_used = float(self.profile.spare_bytes)

    # --- what `nvme smart-log -o json` would print ---------------------------------------------------

    def smart_log(self) -> dict[str, int | float | str]:
        p = self.profile
        return {
            "critical_warning": 0,
            "temperature": round(self.composite_c + KELVIN),
            "avail_spare": 100,
            "spare_thresh": 10,
            "percent_used": 0,
            "data_units_read": int(self.bytes_read / 512_000),
            "data_units_written": int(self.bytes_written / 512_000),
            "warning_temp_time": int(self.warning_time / 60),
            "critical_comp_time": 0,
            **{f"temperature_sensor_{i}": 0 for i in range(1, 9)},  # composite only (physics.md)
            "thm_temp1_trans_count": self.tmt1_count,
            "thm_temp2_trans_count": self.tmt2_count,
            "thm_temp1_total_time": int(self.tmt1_time),
            "thm_temp2_total_time": int(self.tmt2_time),
            "power_state": self.state,  # not in smart-log; `nvme get-feature -f 2` on a real drive
            "power_state_name": p.states[self.state].name,
        }

    def smart_log_json(self) -> str:
        return json.dumps(self.smart_log(), indent=2)
