"""The virtual drive's firmware, as far as heat goes: power from the work it does, a thermal throttle
that walks NVMe power states on the controller's temperature, a composite sensor on the NAND side,
thermal-management counters, the fill state by LBA that sets random-write speed, and the service time
of each request by operation, size and power state (docs/virtual-drive.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from thermrig.dut.replay import Pattern
from thermrig.hardware.drive_profiles import DriveProfile
from thermrig.virtual_drive.lba_map import LbaMap

KELVIN = 273.15


@dataclass(frozen=True)
class Service:
    """How the drive serves one request, at the drive's own scale: the pipeline holds it `occupancy` s
    (1 / the throughput the current power state allows for it), and it cannot complete sooner than
    `latency` s after it arrived (the QD1 service time). Throughput at queue depth q: min(q / latency,
    1 / occupancy) requests per second."""

    occupancy: float
    latency: float


def write_amplification(op: float) -> float:
    """Greedy garbage collection under uniform random writes, op = free / valid NAND: (1 + op) / (2 op),
    never under 1 (Hu et al., "Write amplification analysis in flash-based SSDs", SYSTOR 2009)."""
    return max(1.0, (1.0 + op) / (2.0 * op)) if op > 0 else float("inf")


TRIM_S = 20e-6  # a deallocate touches only the mapping table: no NAND work, no power


class DriveModel:
    def __init__(self, profile: DriveProfile, lba: LbaMap | None = None) -> None:
        self.profile = profile
        self.pattern: Pattern | None = None  # the replay's steady workload (served requests carry their own)
        self.state = 0  # index into profile.states: 0 full speed, last = heavy throttle
        self.allow_w: float | None = None  # the throttle's power allowance, None at full speed
        self.ctrl_c = 25.0  # last controller temperature seen
        self.composite_c = 25.0
        self.power_w = profile.idle_power_w
        self.lba = LbaMap(profile.capacity_bytes) if lba is None else lba  # served: the map nbdkit shares
        self.nand_written = 0.0  # fresh NAND used since the last format, up to capacity + spare
        self.bytes_read = 0.0
        self.bytes_written = 0.0
        self.tmt1_count = self.tmt2_count = 0
        self.tmt1_time = self.tmt2_time = 0.0
        self.warning_time = 0.0  # seconds above WCTEMP (never, when the drive reports none)
        self.cache_used = 0.0  # bytes in the SLC cache not yet folded into TLC (profiles with a cache)
        self.hctm = 0  # host-controlled thermal management: TMT1 << 16 | TMT2 in kelvin, 0 = off
        self._since_step = 0.0
        self._busy_read = self._busy_write = 0.0  # full-speed seconds of work since the last tick
        self._next_write = -1  # the offset a sequential write stream continues at
        self._next_read = -1  # the offset the read-ahead buffer holds, while the last request was a read
        self._fill_cursor = 0  # where the replay's sequential writes map next
        self.transitions: list[tuple[float, int]] = []  # (drive uptime s, new state), for the log
        self.uptime = 0.0
        # (write, bytes, sequential, garbage-collected) -> (full-speed time, service): the fill and the
        # throttle move them slowly (cleared every tick), requests arrive by the thousand
        self._services: dict[tuple[bool, int, bool, bool, bool], tuple[float, Service]] = {}

    # --- fill state ---------------------------------------------------------------------------------

    @property
    def filled(self) -> int:
        """Bytes of LBA space mapped (written and not trimmed since the last format)."""
        return self.lba.mapped_bytes

    @property
    def is_steady_state(self) -> bool:
        """No fresh NAND left since the format: random writes wait for garbage collection. New data and
        random overwrites use fresh NAND; a sequential overwrite frees whole blocks as it goes."""
        p = self.profile
        return self.nand_written >= p.capacity_bytes + p.spare_bytes

    def gc_write_iops(self) -> float:
        """Random 4 KiB writes once garbage collection paces them: the profile's steady-state rate at its
        own over-provisioning (a full drive), scaled by write amplification for the space actually free,
        spare area plus unmapped LBAs ("25 % spare area" = a quarter of the LBAs left unwritten)."""
        p = self.profile
        valid = max(self.filled, 1)
        op = (p.capacity_bytes + p.spare_bytes - valid) / valid
        op0 = p.spare_bytes / p.capacity_bytes
        iops = p.steady_rand_write_iops * write_amplification(op0) / write_amplification(op)
        return min(p.rand_write_iops, iops)

    # --- what the host can get ----------------------------------------------------------------------

    def peak_rate(self) -> float:
        """Bytes/s at full speed for the replay's pattern and the fill state."""
        p, pat = self.profile, self.pattern
        if pat is None:
            return 0.0
        if not pat.random:
            return self.write_bps() if pat.write else p.seq_read_bps
        if not pat.write:
            return min(p.rand_read_iops * pat.bs, p.seq_read_bps)
        iops = p.rand_write_iops if not self.is_steady_state else self.gc_write_iops()
        return min(iops * pat.bs, self.write_bps())

    @property
    def cache_full(self) -> bool:
        """An SLC-cached drive that has taken its cache's size in writes since it last folded it back."""
        size = self.profile.slc_cache_bytes
        return size > 0 and self.cache_used >= size

    def write_bps(self) -> float:
        """The sequential write rate: the post-cache rate once the SLC cache is full."""
        p = self.profile
        return min(p.seq_write_bps, p.post_cache_write_bps) if self.cache_full else p.seq_write_bps

    def active_power_w(self, write: bool | None = None) -> float:
        if write is None:
            write = self.pattern is not None and self.pattern.write
        return self.profile.write_power_w if write else self.profile.read_power_w

    def cap_fraction(self, write: bool | None = None) -> float:
        """Throughput cap of the current power state: the share of the active power it allows."""
        p = self.profile
        span = self.active_power_w(write) - p.idle_power_w
        if span <= 0:
            return 1.0
        allow = p.states[0].max_w if self.allow_w is None else self.allow_w
        return max(0.0, min(1.0, (allow - p.idle_power_w) / span))

    def cap_rate(self) -> float:
        return self.peak_rate() * self.cap_fraction()

    # --- served requests ----------------------------------------------------------------------------

    def service(self, write: bool, length: int, sequential: bool) -> tuple[float, float]:
        """(full-speed pipeline time, QD1 latency) of one request, before the power state's cap. A
        sequential read is one the read-ahead buffer already holds: it completes at its transfer time."""
        p = self.profile
        if write:
            gc = self.is_steady_state and not sequential  # sequential overwrites free whole blocks
            iops = self.gc_write_iops() if gc else p.rand_write_iops
            full = 1.0 / min(iops, self.write_bps() / length)
            latency = 1.0 / p.qd1_rand_write_iops + max(0, length - 4096) / p.seq_write_bps
        else:
            full = 1.0 / min(p.rand_read_iops, p.seq_read_bps / length)
            latency = 1.0 / p.qd1_rand_read_iops + max(0, length - 4096) / p.seq_read_bps
            if sequential:
                latency = full
        return full, max(latency, full)

    def serve(self, write: bool, offset: int, length: int, weight: float = 1.0) -> Service:
        """One read or write at an LBA offset; weight: drive requests it stands for (1 / the wire scale)."""
        # A write continuing the last write is sequential; a read is read ahead when it continues the
        # last read and no write came between (writes in the mix hold up the read-ahead).
        sequential = offset == (self._next_write if write else self._next_read)
        key = (write, length, sequential, write and not sequential and self.is_steady_state, self.cache_full)
        cached = self._services.get(key)
        if cached is None:  # the same for every such request until the next tick
            full, latency = self.service(write, length, sequential)
            cached = self._services[key] = (full, Service(full / max(self.cap_fraction(write), 1e-6), latency))
        full, service = cached
        if write:
            self._next_write, self._next_read = offset + length, -1
            new = self.lba.write(offset, length)
            self._programmed(length * weight, new if sequential else length * weight)
            self._busy_write += full * weight
        else:
            self._next_read = offset + length
            self.bytes_read += length * weight
            self._busy_read += full * weight
        return service

    def flow_mix(self, dt: float, read_frac: float, bs: int, qd: int, sequential: bool) -> tuple[float, float]:
        """The replay of a mixed workload for dt seconds at queue depth qd: (reads, writes) served, as
        the served drive would over many requests (throughput min(qd / latency, 1 / occupancy)). Random
        writes use fresh NAND; sequential ones are assumed to overwrite (a pre-filled drive). In a
        sequential mix a read is read ahead when the request before it was a read too: read_frac of them."""
        fr, lr = self.service(False, bs, False)
        fw, lw = self.service(True, bs, sequential)
        f = read_frac
        if sequential:
            lr = f * self.service(False, bs, True)[1] + (1 - f) * lr
        latency = f * lr + (1 - f) * lw
        occupancy = f * fr / max(self.cap_fraction(False), 1e-6) + (1 - f) * fw / max(self.cap_fraction(True), 1e-6)
        n = min(qd / latency, 1.0 / occupancy) * dt
        reads, writes = f * n, (1 - f) * n
        self.bytes_read += reads * bs
        self._busy_read += reads * fr
        self._busy_write += writes * fw
        self._programmed(writes * bs, 0.0 if sequential else writes * bs)
        return reads, writes

    def absorb(self, busy_read: float, busy_write: float, read: float, written: float, fresh: float) -> None:
        """Work the served drive's data path did since the last tick (the nbdkit plugin times and counts
        each request as serve() would): full-speed seconds per direction, bytes read and written and
        the bytes of them on fresh NAND, at the drive's scale."""
        self._busy_read += busy_read
        self._busy_write += busy_write
        self.bytes_read += read
        self._programmed(written, fresh)

    def trim(self, offset: int, length: int) -> Service:
        self.lba.trim(offset, length)
        return Service(TRIM_S, TRIM_S)

    def _programmed(self, n: float, fresh: float) -> None:
        """n bytes written by the host, `fresh` of them on fresh NAND."""
        self.bytes_written += n
        p = self.profile
        if p.slc_cache_bytes:
            self.cache_used = min(float(p.slc_cache_bytes), self.cache_used + n)
        self.nand_written = min(float(p.capacity_bytes + p.spare_bytes), self.nand_written + fresh)

    def _flow(self, moved: float) -> None:
        """The replay's pattern moved `moved` bytes: work, and the fill a sequential stream leaves."""
        pat = self.pattern
        if pat is None or moved <= 0:
            return
        busy = moved / self.peak_rate()
        if not pat.write:
            self.bytes_read += moved
            self._busy_read += busy
            return
        self._busy_write += busy
        fresh = moved
        if not pat.random:
            cap = self.profile.capacity_bytes
            n = int(min(moved, cap - self._fill_cursor))
            fresh = self.lba.write(self._fill_cursor, n) if n > 0 else 0
            self._fill_cursor = (self._fill_cursor + int(moved)) % cap
        self._programmed(moved, fresh)

    # --- one tick -----------------------------------------------------------------------------------

    def tick(self, dt: float, ctrl_c: float, board_c: float, moved: float = 0.0) -> float:
        """Account the work of the last dt seconds (served requests, plus `moved` bytes of the replay's
        pattern), re-evaluate the throttle, and return the power the drive dissipates next tick."""
        p = self.profile
        self.uptime += dt
        self._services.clear()
        self.ctrl_c = ctrl_c
        self.composite_c = board_c + p.composite_offset_c
        self._flow(moved)
        read, write = (min(1.0, b / dt) for b in (self._busy_read, self._busy_write)) if dt > 0 else (0.0, 0.0)
        # Work past the tick (requests arrive in bursts around tick edges) is carried, up to a tick's
        # worth, not lost: a saturated drive dissipates its full power every tick.
        if write <= 0 and self.cache_used > 0:  # idle from writes: the SLC cache folds back into TLC
            self.cache_used = max(0.0, self.cache_used - p.cache_fold_bps * dt)
        self._busy_read = min(dt, self._busy_read - read * dt)
        self._busy_write = min(dt, self._busy_write - write * dt)
        self.power_w = (
            p.idle_power_w
            + (p.read_power_w - p.idle_power_w) * read
            + (p.write_power_w - p.idle_power_w) * min(write, 1.0 - read)
        )
        if self.state == len(p.states) - 1:
            self.tmt2_time += dt
        elif self.state > 0:
            self.tmt1_time += dt
        self._since_step += dt
        if self._since_step >= p.step_s - 1e-9:
            self._since_step = 0.0
            self._step_throttle()
        return self.power_w

    def _step_throttle(self) -> None:
        """Once a step_s: at or above tmt2 the heavy state; at or above tmt1 from full speed the light
        throttle starts at the first throttled state's power; while throttled, the allowed power is
        trimmed by `throttle_gain` W per kelvin the controller sits from tmt1, between the heavy state's
        power and full speed, so the controller is held at tmt1 in one steady state rather than hunting
        between two; full speed again once the allowance is back at full power and the controller is
        `hysteresis_c` below tmt1."""
        p = self.profile
        states = p.states
        top, floor = states[0].max_w, states[-1].max_w
        over1, over2 = self._over_thresholds()
        if over2 >= 0:
            allow = floor
        elif self.allow_w is None:
            allow = states[1].max_w if over1 >= 0 else None
        else:
            allow = min(top, max(floor, self.allow_w - p.throttle_gain * over1 * p.step_s))
            if allow >= top and over1 < -p.hysteresis_c:
                allow = None
        self.allow_w = allow
        new = 0 if allow is None else self._state_for(allow)
        if new == self.state:
            return
        if new == len(states) - 1:
            self.tmt2_count += 1
        elif self.state == 0:
            self.tmt1_count += 1
        self.state = new
        self.transitions.append((self.uptime, new))

    def _over_thresholds(self) -> tuple[float, float]:
        """How far the drive is past its light and heavy throttle thresholds (K, negative below): its
        own on the controller's temperature, and the host's HCTM TMT1/TMT2 on the composite temperature
        where the host set them (NVMe: the drive throttles at whichever it reaches first)."""
        p = self.profile
        over1, over2 = self.ctrl_c - p.tmt1_c, self.ctrl_c - p.tmt2_c
        tmt1_k, tmt2_k = (self.hctm >> 16) & 0xFFFF, self.hctm & 0xFFFF
        if tmt1_k:
            over1 = max(over1, self.composite_c + KELVIN - tmt1_k)
        if tmt2_k:
            over2 = max(over2, self.composite_c + KELVIN - tmt2_k)
        return over1, over2

    def _state_for(self, allow: float) -> int:
        """The power state a throttle allowance falls in: the deepest one whose maximum covers it; the
        heavy state only at its own power."""
        states = self.profile.states
        if allow <= states[-1].max_w:
            return len(states) - 1
        return max(1, max(i for i, s in enumerate(states[:-1]) if s.max_w >= allow - 1e-9))

    # --- host-side controls -------------------------------------------------------------------------

    def format(self) -> None:
        """`nvme format`: every LBA unmapped, every block erased."""
        self._services.clear()
        self.lba.clear()
        self.nand_written = 0.0
        self.cache_used = 0.0
        self._fill_cursor = 0
        self._next_write = self._next_read = -1

    def fill(self, span: int | None = None, passes: int = 1) -> None:
        """The fast path of a purge and `passes` sequential writes of [0, span): the drive state they
        leave (LBAs mapped, NAND and data units written), without moving the bytes over the wire."""
        p = self.profile
        span = p.capacity_bytes if span is None else min(span, p.capacity_bytes)
        self.format()
        self.lba.fill(span)
        self._programmed(float(span) * passes, float(span))  # the later passes overwrite in sequence
        self.cache_used = 0.0  # and the idle time after it folded the SLC cache back

    def precondition(self) -> None:
        """Full and the spare area used up by random overwrites (SNIA steady state): the replay's start
        for the consistency checks."""
        self.fill()
        self.nand_written = float(self.profile.capacity_bytes + self.profile.spare_bytes)

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

    def id_ctrl(self) -> dict[str, object]:
        """What `nvme id-ctrl -o json` (nvme-cli 2.x) would print of the thermal fields: no WCTEMP or
        CCTEMP (the 950 Pro reports none), HCTM supported from 0 °C up to the drive's own TMT2, and a
        power state descriptor per power state (MXPS 0: centiwatts)."""
        p = self.profile
        return {
            "mn": p.model,
            "sn": p.serial,
            "fr": p.firmware,
            "wctemp": 0,
            "cctemp": 0,
            "hctma": 1,
            "mntmt": round(KELVIN),
            "mxtmt": round(p.tmt2_c + KELVIN),
            "npss": len(p.states) - 1,
            "psds": [
                {"max_power": round(s.max_w * 100), "max_power_scale": 0, "non-operational_state": 0} for s in p.states
            ],
        }

    def set_hctm(self, value: int) -> None:
        """`nvme set-feature -f 0x10 -v VALUE`: TMT1 << 16 | TMT2 in kelvin (0 turns a threshold off).
        Values outside MNTMT..MXTMT, or TMT1 not below TMT2, are refused as a drive refuses them
        (Invalid Field in Command)."""
        tmt1, tmt2 = (value >> 16) & 0xFFFF, value & 0xFFFF
        lo, hi = round(KELVIN), round(self.profile.tmt2_c + KELVIN)
        if any(t and not lo <= t <= hi for t in (tmt1, tmt2)) or (tmt1 and tmt2 and tmt1 >= tmt2):
            raise ValueError(f"HCTM value {value:#010x}: Invalid Field in Command")
        self.hctm = value

    def smart_log_json(self) -> str:
        return json.dumps(self.smart_log(), indent=2)
