"""The fault matrix: every row of docs/safety.md injected into the simulated rig, with the reaction
the firmware must show and the time it took, in rig time."""

from __future__ import annotations

import queue
from dataclasses import dataclass

from thermrig.children import wait_for
from thermrig.conformance.deadlines import AIR_STUCK_LOW_C, DEADLINES, HEAT_ABOVE_ROOM_C, TC_NOISY_C
from thermrig.conformance.result import Check, NotApplicable, expect
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.dut.faults import FaultKind
from thermrig.protocol.limits import HOLD_HYST_C, HOLD_PERIOD_S
from thermrig.protocol.messages import ChannelStatus, Fault, Telemetry

D = DEADLINES


@dataclass(frozen=True)
class FaultCase:
    kind: FaultKind
    expect: Fault  # Fault(0): no fault may latch
    deadline_s: float  # conformance.deadlines (docs/safety.md); measured from injection, in rig time
    channel: int = 0
    value: float | None = None
    heating: bool = True
    warmup_s: float = 3.0
    observe_s: float = 5.0
    fans: tuple[int, int] = (400, 0)
    otherwise: Fault | None = None  # a fault that answers as well (whichever check the spoiled readings trip first)

    @property
    def name(self) -> str:
        suffix = (
            f":{self.channel}" if self.kind.value.startswith(("tc-", "fan-", "tach-", "spi-", "cs-", "pwm-")) else ""
        )
        return f"fault:{self.kind.value}{suffix}"


def _start(t: RigUnderTest, case: FaultCase) -> float:
    """Bring the rig to the case's starting state; return the chassis-air target."""
    assert t.faults is not None
    t.faults.clear()
    t.run_for(0.3)  # sensors read true again; a reading that jumps back may latch a fault here
    t.link.command("CLEAR")
    frames = t.run_for(0.3)
    expect(not frames[-1].faults, f"the rig does not start clean: {frames[-1].faults!r}")
    fan0, fan1 = case.fans
    # Relative to the air as it is: earlier cases may have left the chassis warm.
    target = max(t.room_c(), frames[-1].named("chassis_air").value) + HEAT_ABOVE_ROOM_C
    if case.heating:
        t.link.set(air=round(target * 100), hlim=1000, heat=1, fan0=fan0, fan1=fan1)
    else:
        t.link.set(heat=0, fan0=fan0, fan1=fan1)
    t.run_for(case.warmup_s)
    return target


def _first_with(frames: list[Telemetry], bits: Fault) -> Telemetry | None:
    return next((f for f in frames if f.faults & bits == bits), None)


def run_case(t: RigUnderTest, case: FaultCase) -> str:
    expect(t.faults is not None, "fault injection needs the simulated rig (--sim)")
    assert t.faults is not None
    target = _start(t, case)
    injected_at_ms = t.run_for(0.1)[-1].uptime_ms
    t.faults.inject(case.kind, case.channel, case.value)
    frames = t.run_for(case.observe_s)
    try:
        if case.expect:
            hit = _first_with(frames, case.expect)
            if case.otherwise is not None:
                other = _first_with(frames, case.otherwise)
                hit = min((f for f in (hit, other) if f is not None), key=lambda f: f.uptime_ms, default=None)
            wanted = f"{case.expect!r}" + (f" or {case.otherwise!r}" if case.otherwise is not None else "")
            expect(hit is not None, f"no {wanted} within {case.observe_s:.0f} s; saw {frames[-1].faults!r}")
            assert hit is not None
            # After a reset the rig's uptime starts again: the reaction is then its time since boot.
            since = injected_at_ms if hit.uptime_ms >= injected_at_ms else 0
            reaction = (hit.uptime_ms - since) / 1000
            expect(hit.heater_pct == 0 and min(hit.fan_pct.values()) == 100, "not in the safe state")
            expect(reaction <= case.deadline_s, f"reacted after {reaction:.1f} s, deadline {case.deadline_s:.1f} s")
            latched = case.otherwise if case.otherwise and hit.faults & case.expect != case.expect else case.expect
            return f"{latched.name} after {reaction:.1f} s (deadline {case.deadline_s:g} s), heater off, fans full"
        return _no_fault_outcome(t, case, frames, target)
    finally:
        t.faults.clear()
        t.run_for(0.2)  # a tick with the fault gone: a HAL error reported with its sample does not latch again
        t.link.command("CLEAR")
        t.safe()


def _no_fault_outcome(t: RigUnderTest, case: FaultCase, frames: list[Telemetry], target: float) -> str:
    latched = [f.faults for f in frames if f.faults]
    expect(not latched, f"{latched[0] if latched else ''!r} latched; this fault must not trip the rig")
    last = frames[-1]
    if case.kind in (FaultKind.AMBIENT_MISSING, FaultKind.AMBIENT_CRC, FaultKind.AMBIENT_CRC_TEMP):
        ambient = last.named("ambient_t").status
        expect(ambient == ChannelStatus.NO_DATA, f"ambient status {ambient!r}")
        expect(last.heat_enabled, "heating stopped for an informational sensor")
        return "ambient flagged NO_DATA, heating carries on"
    if case.kind is FaultKind.SERIAL_GARBAGE:
        expect(last.rx_errors >= 3, f"rig counted {last.rx_errors} bad frames")
        return f"rig counted {last.rx_errors} bad frames, link {sum(t.link.stats.decode_errors.values())}; no fault"
    if case.kind is FaultKind.ROOM_STEP:
        air = last.named("chassis_air").value
        expect(abs(air - target) < 0.75, f"chassis air {air:.2f} C, target {target:.2f} C")
        return f"room +{case.value:g} C: chassis air held at {air - target:+.2f} C of target"
    return "no fault, as specified"


def mcu_reset(t: RigUnderTest) -> str:
    assert t.faults is not None
    t.link.set(air=round((t.room_c() + 5) * 100), heat=1)
    t.run_for(1.0)
    resets = t.link.stats.mcu_resets
    t.faults.inject(FaultKind.MCU_RESET)
    noticed_after = None
    for tick in range(1, 11):
        t.run_for(0.1)
        if t.link.stats.mcu_resets > resets:
            noticed_after = tick * 0.1
            break
    expect(noticed_after is not None, "the host did not notice the MCU reset within 1 s")
    wait_for(lambda: t.link.info is not None, 2)
    gap = next((e for e in reversed(t.link.events) if e.kind == "gap"), None)
    expect(gap is not None, "no gap marked for the reset")
    frames = t.run_for(0.5)
    expect(not frames[-1].heat_enabled, "a rebooted rig must start with the heater off")
    expect(min(frames[-1].fan_pct.values()) == 100, f"fans after boot {frames[-1].fan_pct}: a reset must start full")
    return f"noticed within {noticed_after:.1f} s, re-handshaken, gap marked, heater off and fans full after boot"


def _rebooted(frame: Telemetry | None) -> bool:
    return frame is not None and Fault.WATCHDOG in frame.faults


def pwm_error(t: RigUnderTest) -> str:
    """The heater's PWM driver fails while heating, where a firmware has a PWM driver of its own (the
    Pico's machine.PWM): the heater goes off at once all the same, the MCU restarts by its watchdog and
    boots with the fault latched. A firmware that hands the plant permille values has none to fail."""
    assert t.faults is not None and t.sim is not None
    refused = t.faults.refusal(FaultKind.PWM_ERROR)
    if refused is not None:  # known before the rig is heated for it
        raise NotApplicable(refused)
    # Above the air as it is: a case before (cs-stuck's heating) may have left the chassis warmer than room + 5.
    air = t.run_for(0.3)[-1].named("chassis_air").value
    t.link.set(air=round((max(t.room_c(), air) + 5) * 100), heat=1)
    t.run_for(1.0)
    expect(t.sim.actuators()[0] > 0, "the heater did not come on")
    resets = t.link.stats.mcu_resets
    t.faults.inject(FaultKind.PWM_ERROR, 0)
    try:
        frames = t.run_for(0.3, heartbeat=False, line_dead=True)  # a Pico no longer answers: no pings
        heater, fans = t.sim.actuators()
        expect(heater == 0 and min(fans) == 1.0, f"outputs {heater:.2f}, {fans} 0.3 s after the PWM failed")
        # The board build's HAL reports the refused duty: OUTPUT_ERROR latched, the MCU runs on.
        latched = [f for f in frames + t.link.collect_telemetry(1, timeout=0.5) if Fault.OUTPUT_ERROR in f.faults]
        if latched:
            expect(latched[-1].heater_pct == 0, "the heater is still commanded on")
            t.faults.clear()
            t.run_for(0.2)
            t.link.command("CLEAR")
            return "heater off within 0.3 s (its output stopped), OUTPUT_ERROR latched, fans full"
        t.run_for(2.5, heartbeat=False, line_dead=True)  # the watchdog's 2 s
        # its EVT BOOT is on the line: give the link's reader a moment
        wait_for(lambda: t.link.stats.mcu_resets > resets, 5)
        expect(t.link.stats.mcu_resets > resets, "no MCU reset within 2.8 s of the PWM failing")
    finally:
        t.faults.clear()
    t.run_for(3.0, heartbeat=False)  # the next watchdog reset boots with a working PWM
    wait_for(lambda: _rebooted(t.link.latest), 5)  # the rebooted rig's frames are on the line: the reader reads them
    last = t.link.latest
    expect(_rebooted(last), f"no WATCHDOG latched after the restart: {last}")
    assert last is not None
    expect(last.heater_pct == 0 and min(last.fan_pct.values()) == 100, "not in the safe state after the restart")
    t.link.command("CLEAR")
    return "heater off within 0.3 s, watchdog reset, WATCHDOG latched at boot, heater off and fans full"


def usb_unplug(t: RigUnderTest) -> str:
    assert t.faults is not None
    reconnects = t.link.stats.reconnects
    t.faults.inject(FaultKind.USB_UNPLUG, value=1.0)
    t.run_for(0.3, heartbeat=False)
    wait_for(lambda: not t.link.connected, 2)
    expect(not t.link.connected, "the host did not notice the unplug")
    t.run_for(1.0, heartbeat=False)  # the device comes back under a new name behind the same link
    wait_for(lambda: t.link.stats.reconnects > reconnects, 10)
    expect(t.link.stats.reconnects > reconnects, "no reconnect after the replug")
    restored = next(e for e in reversed(t.link.events) if e.kind == "link_restored")
    expect(t.link.ping().mcu_us > 0, "no reply after reconnecting")
    return f"reconnected ({restored.detail}) and handshaken"


UNPLUG_S = 1.0
# The first frame stamped after the replug must be the next tick's, not a later one's. A stamp is the rig's
# uptime when the tick's step ran, in whole ms: a firmware whose clock does not start on a tick's ms edge
# stamps 1099, 1199, 1299, 1399, 1500 (MicroPython on a Pico), and a tick runs late by whatever the loop did
# first (a Pico answers a command in 7-9 ms of its time, a HELLO in 18-24 ms): the whole suite on
# micropython-rp2040 saw 105 ms. So the next tick's frame is anything up to half a period past one period
# (the telemetry check's largest spacing, the host's gap), the tick after it two periods.
NEXT_TICK_PERIODS = 1.5


def unplug_latched(t: RigUnderTest) -> str:
    """A thermocouple opens while the USB cable is out: the fault latches unseen. The port is back after
    exactly the unplug's time in rig time (nothing advances while the host reconnects), and the host's
    first frames from there show the latched fault, those a Pico's USB CDC kept from while the cable was
    out (MicroPython keeps the latest bytes for a host that opens the port) as well as the first after it."""
    assert t.faults is not None
    t.faults.clear()
    t.run_for(0.3)
    t.link.command("CLEAR")
    t.link.set(heat=0, fan0=400, fan1=0)
    frames = t.run_for(0.3)
    expect(bool(frames), "no telemetry before the unplug")
    expect(not frames[-1].faults, f"the rig does not start clean: {frames[-1].faults!r}")
    unplugged_at = frames[-1].uptime_ms
    reconnects = t.link.stats.reconnects
    seen = t.link.subscribe()
    try:
        t.faults.inject(FaultKind.USB_UNPLUG, value=UNPLUG_S)
        t.faults.inject(FaultKind.TC_OPEN, channel=3)
        t.run_for(0.3, heartbeat=False)
        t.faults.clear()  # the thermocouple reads again; the fault it latched stays until CLEAR
        t.run_for(UNPLUG_S - 0.3, heartbeat=False)
        wait_for(lambda: t.link.stats.reconnects > reconnects, 10)
        expect(t.link.stats.reconnects > reconnects, f"the port was not back {UNPLUG_S:g} s after the unplug")
        t.run_for(0.5)
        after = [f for f in _drain(seen) if f.uptime_ms > unplugged_at]
    finally:
        t.link.unsubscribe(seen)
    t.link.command("CLEAR")
    expect(bool(after), "no telemetry after the replug")
    shown = after[0].faults  # the first the host reads: a frame kept from while the cable was out, or the next
    expect(Fault.TC_OPEN in shown, f"the first frame the host read after the replug shows {shown!r}, not TC_OPEN")
    period_ms = t.link.telemetry_period_ms
    replug_ms = unplugged_at + round(UNPLUG_S * 1000)
    kept = [f for f in after if f.uptime_ms < replug_ms + period_ms // 2]  # the replug tick's and before
    fresh = [f for f in after if f.uptime_ms >= replug_ms + period_ms // 2]
    expect(bool(fresh), "no telemetry from after the replug")
    first = fresh[0]
    late_ms = first.uptime_ms - replug_ms
    # The replug tick's own frame goes out before any host can have the new port open: the next one is first.
    bound_ms = round(NEXT_TICK_PERIODS * period_ms)
    expect(late_ms <= bound_ms, f"the first frame after the replug is {late_ms} ms of rig time late (bound {bound_ms})")
    expect(Fault.TC_OPEN in first.faults, f"the first frame after the replug shows {first.faults!r}, not TC_OPEN")
    held = f" (and {len(kept)} kept from while it was out)" if kept else ""
    return f"back after {UNPLUG_S:g} s of rig time; first frame {late_ms} ms after it{held} shows TC_OPEN latched"


def _drain(q: queue.Queue[Telemetry]) -> list[Telemetry]:
    out = []
    while not q.empty():
        out.append(q.get_nowait())
    return out


# The rig's promise: the safe state at its first tick more than the host timeout after the host's last
# frame, read off the outputs the firmware drives at each of the plant's steps (conformance.deadlines).
SILENCE_SAFE_S = D.serial_silence_s


def serial_silence(t: RigUnderTest) -> str:
    """The line dies while heating. Nothing crosses it, so the firmware's reaction is read off the
    outputs it drives at each plant step; once the line is back, the host sees the latched fault and
    marks the gap."""
    assert t.faults is not None and t.sim is not None
    _start(t, FaultCase(FaultKind.SERIAL_SILENCE, Fault.HOST_LOST, SILENCE_SAFE_S))
    t.link.ping()  # the host's last word before the silence
    t.faults.inject(FaultKind.SERIAL_SILENCE, value=5.0)
    safe_after = None
    for tick in range(1, 51):
        t.run_for(0.1, heartbeat=False, line_dead=True)
        if t.sim.driven() == (0, [1.0, 1.0]):
            safe_after = tick * 0.1
            break
    expect(safe_after is not None, "the plant's heater was still driven 5 s into the silence")
    frames = t.run_for(3.0)
    t.link.command("CLEAR")
    t.safe()
    expect(
        frames and frames[0].faults == Fault.HOST_LOST, f"after the silence: {frames[0].faults if frames else None!r}"
    )
    expect(safe_after <= SILENCE_SAFE_S, f"heater off {safe_after:.1f} s into the silence (bound {SILENCE_SAFE_S:g} s)")
    gap = next((e for e in reversed(t.link.events) if e.kind == "gap"), None)
    expect(gap is not None, "the host marked no gap")
    return f"heater off, fans full {safe_after:.1f} s into the silence; HOST_LOST and the gap seen after"


def hold_lost(t: RigUnderTest) -> str:
    """Heater element breaks after the target was reached: air sags; thermal protection must trip."""
    assert t.faults is not None
    case = FaultCase(FaultKind.HEATER_OPEN, Fault.HOLD_LOST, 0, warmup_s=200.0)
    target = _start(t, case)
    t.faults.inject(FaultKind.HEATER_OPEN)
    frames = t.run_for(240.0)
    t.faults.clear()
    t.link.command("CLEAR")
    t.safe()
    hit = _first_with(frames, Fault.HOLD_LOST)
    expect(hit is not None, f"no HOLD_LOST; saw {frames[-1].faults!r}")
    assert hit is not None
    # Thermal protection restarts its period whenever the reading is back inside the band, as Marlin's
    # does; it counts from the last sample that was not below.
    limit_cc = round(target * 100) - round(HOLD_HYST_C * 100)
    before_hit = [f for f in frames if f.uptime_ms < hit.uptime_ms]
    last_inside = max(f.uptime_ms for f in before_hit if round(f.named("chassis_air").value * 100) >= limit_cc)
    waited = (hit.uptime_ms - last_inside - 100) / 1000
    below = f"falling {HOLD_HYST_C:g} C below target (spec {HOLD_PERIOD_S:g} s)"
    expect(HOLD_PERIOD_S - 1.0 <= waited <= HOLD_PERIOD_S + 0.5, f"tripped {waited:.1f} s after {below}")
    return f"HOLD_LOST {waited:.1f} s after {below}"


CASES = [
    FaultCase(FaultKind.TC_OPEN, Fault.TC_OPEN, D.one_sample_s, channel=3),
    FaultCase(FaultKind.TC_OPEN, Fault.TC_OPEN, D.one_sample_s, channel=0),
    FaultCase(FaultKind.TC_SHORT_GND, Fault.TC_SHORT_GND, D.one_sample_s, channel=1),
    FaultCase(FaultKind.TC_SHORT_VCC, Fault.TC_SHORT_VCC, D.one_sample_s, channel=2),
    FaultCase(FaultKind.SPI_ALL_ONES, Fault.TC_OPEN, D.one_sample_s, channel=2),
    FaultCase(FaultKind.SPI_ALL_ZEROS, Fault.TC_OPEN, D.one_sample_s, channel=1),
    FaultCase(FaultKind.TC_STUCK, Fault.OVER_TEMP, D.one_sample_s, channel=3, value=75.0),
    FaultCase(FaultKind.TC_STUCK, Fault.UNDER_TEMP, D.one_sample_s, channel=1, value=-30.0),
    FaultCase(
        FaultKind.TC_STUCK,
        Fault.HEATER_RUNAWAY,
        D.runaway_air_stuck_low_s,
        channel=3,
        value=AIR_STUCK_LOW_C,
        observe_s=80.0,
    ),
    FaultCase(FaultKind.TC_NOISY, Fault.TC_JUMP, D.noisy_jump_s, channel=1, value=TC_NOISY_C),
    # tc0's chip select held low: every other channel reads its word ANDed with tc0's frozen one, so the
    # chassis air reads no warmer than tc0's last conversion while the heater heats; the first reading
    # that drops across a bit the frozen word lacks is a jump, unless verify_heater's runaway comes first
    # (no 2 C gain in its 20 s window). After the cases that hold absolute readings: the air it leaves
    # warm would move them.
    FaultCase(
        FaultKind.CS_STUCK,
        Fault.TC_JUMP,
        D.runaway_cs_stuck_s,
        channel=0,
        observe_s=65.0,
        otherwise=Fault.HEATER_RUNAWAY,
    ),
    # verify_heater re-arms its 20 s window after each 2 C gain (the element's stored heat gives one).
    FaultCase(FaultKind.HEATER_OPEN, Fault.HEATER_RUNAWAY, D.runaway_heater_open_s, observe_s=90.0),
    FaultCase(
        FaultKind.HEATER_STUCK_ON, Fault.HEATER_STUCK, D.heater_stuck_s, heating=False, warmup_s=12.0, observe_s=40.0
    ),
    FaultCase(FaultKind.FAN_STALL, Fault.FAN_STALL, D.fan_stall_s, channel=1, heating=False, fans=(400, 500)),
    FaultCase(FaultKind.TACH_MISSING, Fault.FAN_STALL, D.fan_stall_s, channel=0, heating=False),
    FaultCase(FaultKind.WATCHDOG_RESET, Fault.WATCHDOG, D.watchdog_s, observe_s=1.0),
    FaultCase(FaultKind.AMBIENT_MISSING, Fault(0), 0),
    FaultCase(FaultKind.AMBIENT_CRC, Fault(0), 0),
    FaultCase(FaultKind.AMBIENT_CRC_TEMP, Fault(0), 0),
    FaultCase(FaultKind.SERIAL_GARBAGE, Fault(0), 0, observe_s=1.0),
    FaultCase(FaultKind.ROOM_STEP, Fault(0), 0, value=8.0, warmup_s=200.0, observe_s=300.0),
]

FAULT_CHECKS = [
    Check(c.name, f"{c.kind.value} -> {c.expect.name or 'no fault'}", lambda t, c=c: run_case(t, c), needs_sim=True)
    for c in CASES
] + [
    Check(
        "fault:serial-silence",
        f"line dead while heating -> safe state within the host timeout, a tick and a step ({SILENCE_SAFE_S:g} s)",
        serial_silence,
        needs_sim=True,
    ),
    Check(
        "fault:hold-lost",
        f"heater breaks at target -> HOLD_LOST {HOLD_PERIOD_S:g} s after {HOLD_HYST_C:g} C below",
        hold_lost,
        needs_sim=True,
    ),
    Check(
        "fault:mcu-reset",
        "MCU reset -> host notices within 1 s, re-handshakes, marks the gap",
        mcu_reset,
        needs_sim=True,
    ),
    Check(
        "fault:pwm-error:0",
        "heater PWM driver fails -> heater off; OUTPUT_ERROR or a watchdog reset latched",
        pwm_error,
        needs_sim=True,
    ),
    Check("fault:usb-unplug", "USB unplug -> reconnect with backoff, handshake again", usb_unplug, needs_sim=True),
    Check(
        "fault:unplug-latched",
        "fault latched while unplugged -> port back on time, first frames show it",
        unplug_latched,
        needs_sim=True,
    ),
]
