# Safety supervisor (firmware/core/safety.c, docs/safety.md): channel plausibility, heater verification
# after Klipper's verify_heater and Marlin's THERMAL_PROTECTION, heater stuck on. It only latches;
# the rig applies the safe state.
from array import array

from . import config as c
from .max31855 import FAULT_OC, FAULT_SCG, FAULT_SCV


class Safety:
    def __init__(self):
        self.last_cc = array("i", bytes(4 * c.NUM_TC))
        self.have_last = bytearray(c.NUM_TC)
        self.off_air_cc = array("i", bytes(4 * (c.STUCK_WINDOW_S + 1)))
        self.reset()

    def reset(self):
        self.latched = 0
        for i in range(c.NUM_TC):
            self.have_last[i] = 0
        self.clock_ms = 0
        self.off_idx = 0
        self.off_ms = 0
        self.off_second_ms = 0
        self.goal_cc = 0
        self.goal_ms = 0
        self._verify_restart()

    def latch(self, faults):
        self.latched |= faults

    def tripped(self):
        return self.latched != 0

    def _verify_restart(self):
        self.approaching = False
        self.error_cc_s = 0
        self.last_target_cc = 0
        self.hold_target_cc = 0
        self.reached = False
        self.below_ms = 0
        self.check_ms = 1000

    def clear(self):
        """Clears every latched fault and restarts heater verification; causes still present latch again."""
        self.latched = 0
        self._verify_restart()
        self.off_ms = 0  # the stuck-on watch starts afresh: history from before a fault is not evidence
        self.off_second_ms = 0

    def check_tc(self, ch, tc_cc, faults):
        """One thermocouple reading; returns its status flags and latches the matching faults."""
        if faults:
            self.latch(
                (c.FAULT_TC_OPEN if faults & FAULT_OC else 0)
                | (c.FAULT_TC_SHORT_GND if faults & FAULT_SCG else 0)
                | (c.FAULT_TC_SHORT_VCC if faults & FAULT_SCV else 0)
            )
            self.have_last[ch] = 0
            return faults & (c.CH_OPEN | c.CH_SHORT_GND | c.CH_SHORT_VCC)
        flags = 0
        if tc_cc > c.TC_MAX_CC[ch]:
            flags |= c.CH_RANGE
            self.latch(c.FAULT_OVER_TEMP)
        elif tc_cc < c.TC_MIN_CC:
            flags |= c.CH_RANGE
            self.latch(c.FAULT_UNDER_TEMP)
        if self.have_last[ch]:
            delta = tc_cc - self.last_cc[ch]
            if delta > c.TC_MAX_JUMP_CC or delta < -c.TC_MAX_JUMP_CC:
                flags |= c.CH_JUMP
                self.latch(c.FAULT_TC_JUMP)
        self.last_cc[ch] = tc_cc
        self.have_last[ch] = 1
        return flags

    def _verify_once(self, target_cc, air_cc):
        # Klipper verify_heater check_event, once per second.
        if air_cc >= target_cc - c.VERIFY_HYST_CC:
            self.approaching = False
            if air_cc <= target_cc + c.VERIFY_HYST_CC:
                self.error_cc_s = 0
            self.last_target_cc = target_cc
            return
        self.error_cc_s += (target_cc - c.VERIFY_HYST_CC) - air_cc
        if not self.approaching:
            if target_cc != self.last_target_cc:
                self.approaching = True
                self.goal_cc = air_cc + c.VERIFY_GAIN_CC
                self.goal_ms = self.clock_ms + c.VERIFY_GAIN_TIME_MS
            elif self.error_cc_s >= c.VERIFY_MAX_ERROR_CC_S:
                self.latch(c.FAULT_HEATER_RUNAWAY)
        elif air_cc >= self.goal_cc:
            self.error_cc_s = 0
            self.goal_cc = air_cc + c.VERIFY_GAIN_CC
            self.goal_ms = self.clock_ms + c.VERIFY_GAIN_TIME_MS
        elif self.clock_ms >= self.goal_ms:
            self.approaching = False
        self.last_target_cc = target_cc

    def check_heater(self, active, target_cc, air_cc, dt_ms):
        """Heater verification once per control tick; active: the heater is under closed-loop control."""
        self.clock_ms += dt_ms
        if not active:
            self._verify_restart()
            return
        if target_cc != self.hold_target_cc:
            self.hold_target_cc = target_cc
            self.reached = False
        if air_cc >= target_cc - c.VERIFY_HYST_CC:
            self.reached = True
        if self.reached and air_cc < target_cc - c.HOLD_HYST_CC:
            self.below_ms += dt_ms
            if self.below_ms >= c.HOLD_PERIOD_MS:
                self.latch(c.FAULT_HOLD_LOST)
        else:
            self.below_ms = 0
        if self.check_ms > dt_ms:
            self.check_ms -= dt_ms
            return
        self.check_ms = 1000
        self._verify_once(target_cc, air_cc)

    def check_stuck(self, heater_pm, air_cc, dt_ms):
        """A heater commanded off cannot heat the air by 2 C in 20 s: only a welded relay or a shorted
        MOSFET does that (the element's stored heat gives well under 1 C)."""
        if heater_pm != 0:
            self.off_ms = 0
            self.off_second_ms = 0
            return
        self.off_ms += dt_ms
        if self.off_ms < c.STUCK_SETTLE_MS:
            return
        self.off_second_ms += dt_ms
        window = c.STUCK_WINDOW_S + 1
        if self.off_ms - dt_ms < c.STUCK_SETTLE_MS:
            for i in range(window):
                self.off_air_cc[i] = air_cc  # start of the watch: no history yet
            self.off_idx = 0
        if self.off_second_ms < 1000:
            return
        self.off_second_ms -= 1000
        self.off_idx = (self.off_idx + 1) % window
        self.off_air_cc[self.off_idx] = air_cc
        for i in range(window):
            if air_cc - self.off_air_cc[i] >= c.STUCK_RISE_CC:
                self.latch(c.FAULT_HEATER_STUCK)
                return
