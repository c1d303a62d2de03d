"""The fault matrix's deadlines, each computed from the firmware limits it follows from
(thermrig.protocol.limits) plus a named margin with its reason. A deadline is measured from the
injection, in rig time, to the first frame that shows the fault latched (or, for a dead serial line, to
the plant step whose outputs show the safe state). `Deadlines.of(limits)` computes them from any object
with the limits' names, so a changed limit moves every deadline that follows from it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from thermrig.protocol import limits as rig_limits

HEAT_ABOVE_ROOM_C = 10.0  # each heating case heats this far above the chassis air it starts from

# verify_heater runs its check once a second (Klipper's check_event; firmware/core/safety.c): a runaway
# latches at the first check after its condition holds.
VERIFY_CHECK_S = 1.0

# The coolest room the cases assume: RigUnderTest.room_c's value when the ambient sensor does not read.
# A case heats HEAT_ABOVE_ROOM_C above the warmer of the room and the air, so its target is at least this
# plus HEAT_ABOVE_ROOM_C.
ROOM_MIN_C = 22.0

# The chance a deadline set by random noise may miss the fault that is there.
NOISE_MISS_P = 1e-7

# The noise tc-noisy adds to a thermocouple (standard deviation, degC) and the reading tc-stuck freezes
# the chassis air at, too cold for its target: the cases' own values, which their deadlines follow.
TC_NOISY_C = 6.0
AIR_STUCK_LOW_C = 24.0


@dataclass(frozen=True)
class Deadlines:
    one_sample_s: float  # a fault the firmware sees in one thermocouple sample
    noisy_jump_s: float  # tc-noisy: the sample whose noise first jumps more than the jump limit
    runaway_air_stuck_low_s: float  # tc-stuck:3 cold: verify_heater, the air reading frozen below its target
    runaway_heater_open_s: float  # heater-open: verify_heater, the element gone
    runaway_cs_stuck_s: float  # cs-stuck:0: the air reading no warmer than when it stuck
    heater_stuck_s: float  # heater-stuck-on, the heater off and settled before the fault
    fan_stall_s: float  # fan-stall, tach-missing
    watchdog_s: float  # watchdog-reset: the fault reported from boot
    serial_silence_s: float  # serial-silence, read off the plant's outputs

    @classmethod
    def of(cls, limits: ModuleType | Any = rig_limits) -> Deadlines:
        tick = limits.TICK_S
        # A frame carries the rig's uptime when its tick's step ran, in whole ms, late by whatever the loop
        # did first: up to half a period (conformance.fault_matrix.NEXT_TICK_PERIODS has the measurements).
        stamp_late = tick / 2
        # The fault is injected between two ticks; the next one samples it and latches.
        one_sample = tick + stamp_late

        # Two samples with the case's noise each differ by more than the jump limit with chance p; the
        # deadline is the number of samples that misses with at most NOISE_MISS_P.
        p_jump = math.erfc(limits.TC_MAX_JUMP_C / (2 * TC_NOISY_C))
        noisy_samples = math.ceil(math.log(NOISE_MISS_P) / math.log(1 - p_jump))

        def runaway(deficit_c: float, last_gain_s: float) -> float:
            """verify_heater's runaway: after the last gain (last_gain_s after the injection at the
            latest) the window runs VERIFY_GAIN_TIME_S and the deficit, at least deficit_c below target
            less the hysteresis, accumulates VERIFY_MAX_ERROR_C_S from that gain; whichever takes
            longer, then the next once-a-second check."""
            accumulate_s = limits.VERIFY_MAX_ERROR_C_S / deficit_c
            return last_gain_s + max(limits.VERIFY_GAIN_TIME_S, accumulate_s) + VERIFY_CHECK_S

        heat_deficit_c = HEAT_ABOVE_ROOM_C - limits.VERIFY_HYST_C  # the air where the case started heating
        ms = {
            "one_sample_s": one_sample,
            "noisy_jump_s": noisy_samples * tick,
            # The frozen reading never gains: the last gain came before the injection.
            "runaway_air_stuck_low_s": runaway(ROOM_MIN_C + heat_deficit_c - AIR_STUCK_LOW_C, 0.0),
            # The element's stored heat gives the air one more gain, within the window armed before the
            # injection; the air is then at most that gain above where the case started.
            "runaway_heater_open_s": runaway(heat_deficit_c - limits.VERIFY_GAIN_C, limits.VERIFY_GAIN_TIME_S),
            # The air reads the AND of its word and the stuck chip's frozen one: it may still gain once,
            # within the window armed before the injection, before the frozen word caps it.
            "runaway_cs_stuck_s": runaway(heat_deficit_c - limits.VERIFY_GAIN_C, limits.VERIFY_GAIN_TIME_S),
            # Off and settled when it sticks: the air must rise STUCK_RISE_C within the window; the
            # deadline is the documented bound from the heater going off, settle plus window.
            "heater_stuck_s": limits.STUCK_SETTLE_S + limits.STUCK_WINDOW_S,
            # The tick the fault falls in may still count pulses the tach gave before it.
            "fan_stall_s": limits.FAN_STALL_S + tick + stamp_late,
            # Uptime starts again at the reset: the fault is latched at boot and shown by the first tick,
            # which may follow a tick's worth of boot (handshake, sensors) before the loop runs.
            "watchdog_s": tick + tick,
            # The first tick more than the host timeout after the host's last frame latches HOST_LOST;
            # the plant shows the outputs that tick drives at its next step, one tick later.
            "serial_silence_s": limits.HOST_TIMEOUT_S + tick + tick,
        }
        return cls(**{name: round(value, 3) for name, value in ms.items()})  # whole ms: no float residue


DEADLINES = Deadlines.of()
