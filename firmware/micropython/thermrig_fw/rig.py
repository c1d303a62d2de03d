# The rig (firmware/core/rig.c): received bytes to commands, raw samples to checked readings, control
# and safety, telemetry and events into a preallocated transmit buffer. No allocation on the tick path.
from array import array

from micropython import const

from . import config as c
from . import frame, max31855, sht3x
from .commands import dispatch, nak
from .fan import Fan
from .heap import Heap
from .pid import Pid
from .safety import Safety

_TX_CAP = const(1024)
_TC_KEYS = (b"tc0", b"tc1", b"tc2", b"tc3")
_RPM_KEYS = (b"rpm0", b"rpm1")
_FAN_KEYS = (b"fan0", b"fan1")


class Samples:
    """Raw sensor data as the hardware delivers it, filled in place by a HAL each tick."""

    def __init__(self):
        self.tc_raw = [bytearray(4) for _ in range(c.NUM_TC)]  # MAX31855 words, big-endian
        self.sht_raw = bytearray(6)  # SHT3x T and RH words with their CRCs
        self.sht_present = False  # False when the sensor did not answer on I2C
        self.tach = array("H", bytes(2 * c.NUM_FANS))  # tach pulses since the previous tick


class Rig:
    def __init__(self, board):
        self.board = board
        self.lines = frame.LineBuffer()
        self.frame = frame.Frame()
        self.tx = frame.TxBuffer(_TX_CAP)
        self.pid = Pid()
        self.fans = [Fan() for _ in range(c.NUM_FANS)]
        self.safety = Safety()
        self.tc_cc = array("i", bytes(4 * c.NUM_TC))
        self.tc_status = bytearray(c.NUM_TC)
        # The last command's reply body (after its SEQ, before its '*'): commands write it here, and a
        # resent command gets it again. Bad frames' NAKs are written apart.
        self.reply = frame.TxBuffer(frame.MAX_LEN + 1)
        self.err_reply = frame.TxBuffer(32)
        self.heater_pm = 0
        self.fan_pm = array("H", bytes(2 * c.NUM_FANS))
        self.init(0)

    def init(self, reset_cause):
        """Power-on or reset state: reset_cause 0 (power-on) or FAULT_WATCHDOG (latched at boot)."""
        self.lines.reset()
        self.tx.clear()
        self.tx_seq = 0
        self.frames = 0  # valid frames received
        self.errors = 0  # bad frames: LONG + SYNTAX + CRC
        self.naks = 0
        self.repeats = 0  # resent commands answered from the kept reply
        # Times in ms: small ints for 12 days on an RP2040, where an int of 31 bits or more is a heap
        # object. Only a PING's stamp needs the µs uptime (now_us, set when bytes arrive).
        self.now_us = 0
        self.now_ms = 0
        self.last_step_ms = 0
        self.stepped = False
        self.last_host_ms = 0
        self.reset_cause = reset_cause
        self.heap = Heap()
        self.boot_reported = False
        self.reported_faults = 0
        self.air_target_cc = 0
        self.heat_limit_pm = c.FULL_SCALE_PM
        self.pid.reset()
        for fan in self.fans:
            fan.reset()
        # Every reset boots safe (docs/safety.md): fans full until the host sets them, as a 4-pin fan
        # runs with its PWM line undriven while the MCU restarts.
        self.go_safe()
        self.safety.reset()
        self.safety.latch(reset_cause & c.FAULT_WATCHDOG)
        for i in range(c.NUM_TC):
            self.tc_cc[i] = 0
            self.tc_status[i] = c.CH_NO_DATA
        self.amb_cc = 0
        self.rh_dpct = 0
        self.amb_status = c.CH_NO_DATA
        self.have_last_cmd = False
        self.last_cmd_seq = 0
        self.last_cmd_crc = 0
        self.reply.clear()
        self.tel_period_ms = c.TEL_DEFAULT_MS
        self.next_tel_ms = 0
        self.safe_outputs()  # until the first tick

    def safe_outputs(self):
        """The safe state's outputs (rig_safe.c): heater off, fans at full scale."""
        self.heater_pm = 0
        for i in range(c.NUM_FANS):
            self.fan_pm[i] = c.FULL_SCALE_PM

    def go_safe(self):
        """The commanded safe state (reset, SAFE): heating off, fans full, until the host sets them."""
        self.heat_enabled = False
        for fan in self.fans:
            fan.set_duty(c.FULL_SCALE_PM)

    def heating(self):
        """Whether the heater is under closed-loop control (enabled and no fault latched)."""
        return self.heat_enabled and not self.safety.tripped()

    # -- frames out -------------------------------------------------------------------------------

    def begin(self, type_):
        self.tx.begin(self.tx_seq, type_)

    def send(self):
        """Finish the frame being written under the next SEQ."""
        self.tx_seq = (self.tx_seq + 1) & 0xFFFF
        self.tx.end()

    def _send_reply(self, body):
        """A reply body framed under the next SEQ; an empty one (it overflowed) is dropped as too long."""
        tx = self.tx
        tx.open(self.tx_seq)
        tx.ch(0x20)
        buf = body.buf
        for i in range(body.n):
            tx.ch(buf[i])
        if body.n == 0:
            tx.overflow = True
        self.send()

    # -- frames in --------------------------------------------------------------------------------

    def rx(self, data, n, now_us):
        """Bytes from the host, at MCU time now_us (a PING is stamped with it)."""
        self.now_us = now_us
        self.now_ms = now_us // 1000
        lines = self.lines
        for i in range(n):
            st = lines.push(data[i])
            if st != frame.LINE_NONE:
                self._line(st)
                lines.reset()

    def _line(self, st):
        lines = self.lines
        if st == frame.LINE_READY and lines.n == 0:
            return  # blank line: a person pressing Enter in a terminal
        f = self.frame
        err = frame.ERR_LONG if st == frame.LINE_LONG else frame.decode(lines.buf, lines.n, f)
        if err != frame.OK:
            self.errors += 1
            self.naks += 1
            r = self.err_reply
            r.clear()
            nak(r, -1, frame.ERR_NAMES[err])
            self._send_reply(r)
            return
        self.frames += 1
        self.last_host_ms = self.now_ms
        if self.have_last_cmd and f.seq == self.last_cmd_seq and f.crc == self.last_cmd_crc:
            self.repeats += 1
            self._send_reply(self.reply)
            return
        r = self.reply
        r.clear()
        dispatch(self, f, r)
        if r.overflow:
            r.n = 0
        if r.n > 0 and r.buf[0] == 0x4E:  # "NAK"
            self.naks += 1
        self.have_last_cmd = True
        self.last_cmd_seq = f.seq
        self.last_cmd_crc = f.crc
        self._send_reply(r)

    # -- the control tick -------------------------------------------------------------------------

    def step(self, s, now_ms):
        """One control tick at MCU time now_ms: sensors, control, safety, events, telemetry."""
        self.now_ms = now_ms
        dt_ms = now_ms - self.last_step_ms if self.stepped else c.TICK_MS
        self.stepped = True
        self.last_step_ms = now_ms
        self._read(s, dt_ms)
        self._control(dt_ms)
        self._events()
        # Due within half a tick: scheduling jitter must not skip a frame. Fixed cadence, no drift.
        half = c.TICK_MS // 2
        if self.tel_period_ms != 0 and now_ms + half >= self.next_tel_ms:
            self._telemetry()
            self.next_tel_ms += self.tel_period_ms
            if self.next_tel_ms + half <= now_ms:
                self.next_tel_ms = now_ms + self.tel_period_ms

    def _read(self, s, dt_ms):
        safety = self.safety
        for ch in range(c.NUM_TC):
            raw = s.tc_raw[ch]
            faults = max31855.faults(raw)
            tc_cc = max31855.decode_tc_cc(raw)
            self.tc_status[ch] = safety.check_tc(ch, tc_cc, faults)
            if not faults:
                self.tc_cc[ch] = tc_cc
        # The ambient sensor is informational: a failure is flagged, never a fault.
        if s.sht_present and sht3x.crc_ok(s.sht_raw):
            self.amb_cc = sht3x.decode_t_cc(s.sht_raw)
            self.rh_dpct = sht3x.decode_rh_dpct(s.sht_raw)
            self.amb_status = 0
        else:
            self.amb_status = c.CH_NO_DATA
        for i in range(c.NUM_FANS):
            fan = self.fans[i]
            fan.tach(s.tach[i], dt_ms)
            if fan.stalled():
                safety.latch(c.FAULT_FAN_STALL)

    def _control(self, dt_ms):
        safety = self.safety
        active = self.heating()
        air = self.tc_cc[c.TC_CHASSIS_AIR]
        safety.check_heater(active, self.air_target_cc, air, dt_ms)
        safety.check_stuck(self.heater_pm, air, dt_ms)
        if active and self.now_ms - self.last_host_ms > c.HOST_TIMEOUT_MS:
            safety.latch(c.FAULT_HOST_LOST)
        if not self.heating():
            self.pid.reset()
            # A latched fault: the safe state. Otherwise an idle rig runs its fans as last commanded.
            tripped = safety.tripped()
            self.safe_outputs()
            for i in range(c.NUM_FANS):
                fan = self.fans[i]
                if not tripped:
                    self.fan_pm[i] = fan.update(dt_ms)
                fan.out_pm = self.fan_pm[i]
            return
        duty = self.pid.update(self.air_target_cc, air, dt_ms)
        self.heater_pm = min(duty, self.heat_limit_pm)
        for i in range(c.NUM_FANS):
            self.fan_pm[i] = self.fans[i].update(dt_ms)

    def _channel(self, key, value, status):
        tx = self.tx
        tx.kv(key, value)
        tx.ch(0x3A)
        tx.hex(status, 2)

    def _telemetry(self):
        tx = self.tx
        self.begin(b"TEL")
        tx.s(b" up=")
        tx.u(self.now_ms)
        for ch in range(c.NUM_TC):
            self._channel(_TC_KEYS[ch], self.tc_cc[ch], self.tc_status[ch])
        self._channel(b"amb", self.amb_cc, self.amb_status)
        self._channel(b"rh", self.rh_dpct, self.amb_status)
        for i in range(c.NUM_FANS):
            fan = self.fans[i]
            self._channel(_RPM_KEYS[i], fan.rpm, c.CH_STALL if fan.stalled() else 0)
        tx.kv(b"heat", self.heater_pm)
        for i in range(c.NUM_FANS):
            tx.kv(_FAN_KEYS[i], self.fan_pm[i])
        tx.kv(b"air", self.air_target_cc)
        tx.kv(b"hen", 1 if self.heat_enabled else 0)
        tx.kv(b"hlim", self.heat_limit_pm)
        tx.s(b" flt=")
        tx.hex(self.safety.latched, 4)
        tx.kv(b"err", self.errors)
        self.send()

    def report_boot(self):
        """EVT BOOT, once after init: at the first step, or before it (App.reset) so that a board whose
        outputs fail at once still says it restarted."""
        if not self.boot_reported:
            self.boot_reported = True
            self.begin(b"EVT")
            self.tx.s(b" BOOT")
            self.tx.kv(b"cause", self.reset_cause)
            self.send()

    def _events(self):
        self.report_boot()
        tx = self.tx
        latched = self.safety.latched
        fresh = latched & ~self.reported_faults
        self.reported_faults = latched
        if fresh:
            self.begin(b"EVT")
            tx.s(b" FAULT flt=")
            tx.hex(latched, 4)
            tx.s(b" new=")
            tx.hex(fresh, 4)
            self.send()
