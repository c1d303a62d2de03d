"""Protocol and safety checks that any rig must pass (docs/protocol.md, docs/safety.md)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from thermrig import wiring
from thermrig.conformance.clock_lines import clock_lines
from thermrig.conformance.result import Check, CheckFailed, NotApplicable, expect
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.link.rig_link import NakError
from thermrig.protocol import limits
from thermrig.protocol.channels import ChannelKind
from thermrig.protocol.frame import PROTO_VERSION, encode
from thermrig.protocol.messages import Fault, Nak, Telemetry, flag_names
from thermrig.wiring import Finding

# Channels any rig declares, whatever else it has: the one the heater regulates, the one the
# cool-down watches, and one ambient sensor (temperature and humidity).
ROLES = ("chassis_air", "drive_ctrl", "ambient_t", "ambient_rh")


def _refused(t: RigUnderTest, command: str, *args: str) -> Nak:
    try:
        t.link.command(command, *args)
    except NakError as exc:
        return exc.nak
    raise CheckFailed(f"{command} {' '.join(args)} was accepted")


def handshake(t: RigUnderTest) -> str:
    info = t.link.hello()
    expect(info.proto == PROTO_VERSION, f"protocol {info.proto}, expected {PROTO_VERSION}")
    expect(all(name in info.channels.names for name in ROLES), f"channel map {info.channels} lacks one of {ROLES}")
    kinds = [c.kind for c in info.channels.channels]
    expect(kinds.count(ChannelKind.HUMIDITY) == 1, f"channel map {info.channels}: one humidity channel expected")
    frames = t.run_for(0.3)  # read with the map: a frame whose channels differ from it is a decode error
    expect(bool(frames) and list(frames[-1].readings) == list(info.channels), "telemetry channels are not the map's")
    reply, _, _ = t.link.exchange("HELLO", ("proto=99",), 0.5, 2)
    expect(reply.type == "NAK" and reply.args[1:] == ("VERSION", f"proto={PROTO_VERSION}"), f"HELLO proto=99: {reply}")
    return (
        f"{info.firmware} {info.version} on {info.board}, {len(info.channels)} channels, "
        f"host timeout {info.host_timeout_s:g} s"
    )


def commands(t: RigUnderTest) -> str:
    accepted = [("SET", "air=3000"), ("SET", "hlim=500"), ("SET", "fan0=400"), ("SET", "fan1=0"), ("SET", "rpm1=0")]
    accepted += [("SET", "rate=100"), ("SET", "heat=0"), ("CLEAR",)]
    for cmd in accepted:
        t.link.command(*cmd)
    t.link.command("SAFE")  # the command itself under test: acked (any other SAFE goes through t.safe())
    refused = {
        ("SET", f"air={round(limits.AIR_TARGET_MAX_C * 100) + 1}"): ("RANGE", "air"),
        ("SET", "air=-1"): ("RANGE", "air"),
        ("SET", f"hlim={limits.FULL_SCALE_PM + 1}"): ("RANGE", "hlim"),
        ("SET", f"fan1={2 * limits.FULL_SCALE_PM}"): ("RANGE", "fan1"),
        ("SET", f"rpm0={limits.FAN_MAX_RPM + 1}"): ("RANGE", "rpm0"),
        ("SET", "rate=50"): ("RANGE", "rate"),
        ("SET", "heat=2"): ("RANGE", "heat"),
        ("SET", "air=warm"): ("ARG", "air"),
        ("SET", "volume=11"): ("ARG", None),
        ("SET",): ("ARG", None),
        ("LAUNCH",): ("UNKNOWN", None),
    }
    for cmd, want in refused.items():
        nak = _refused(t, *cmd)
        expect((nak.reason, nak.detail) == want, f"{' '.join(cmd)}: NAK {nak.reason} {nak.detail}, expected {want}")
    first = t.link.ping()
    t.run_for(0.1, heartbeat=False)
    second = t.link.ping()
    expect(second.mcu_us > first.mcu_us, "PING stamps do not increase")
    return f"{len(accepted)} acked, {len(refused)} refused as specified"


def bad_frames(t: RigUnderTest) -> str:
    before = t.run_for(0.3)[-1].rx_errors
    good = encode(4242, "PING")
    bad_crc = good[:-5] + (b"0000" if good[-5:-1] != b"0000" else b"1111") + b"\n"
    t.link.write_raw(bad_crc + b"4242 ping*0000\n" + b"9" * 300 + b"\n")
    # The rig reads its line in order: the PING after the bad frames is answered once they are counted, and
    # the telemetry stamped after that answer carries the count (however late the host reads it).
    counted_us = t.link.ping().mcu_us
    frames = t.run_for(0.5)
    later = [f for f in frames if f.uptime_ms * 1000 >= counted_us]
    expect(bool(later), "no telemetry after the PING that followed the bad frames")
    after = later[-1].rx_errors
    expect(after - before == 3, f"rig counted {after - before} bad frames of 3")
    expect(t.link.ping().mcu_us > 0, "the link did not survive bad frames")
    return "CRC, SYNTAX, LONG: nakked and counted"


def repeats(t: RigUnderTest) -> str:
    first, _, _ = t.link.exchange("PING", (), 0.5, 2)
    t.run_for(0.2, heartbeat=False)  # time passes, no other command in between
    again, _, _ = t.link.exchange("PING", (), 0.5, 2, seq=int(first.args[0]))
    expect(again.type == "ACK", f"resent PING: {again}")
    expect(again.kv()["us"] == first.kv()["us"], f"resent PING stamped {again.kv()['us']}, first {first.kv()['us']}")
    expect(again.seq != first.seq, "the repeated reply reused the rig's sequence number")
    return "resent frame answered from the kept reply (same stamp), not applied again"


TELEMETRY_S = 10.0
LATE_READ_S = 5.0  # how much later than the rig sent them a busy host may read frames (they wait on the line)


def telemetry(t: RigUnderTest) -> str:
    lost_before = t.link.stats.lost_frames
    frames = t.run_for(TELEMETRY_S)
    expect(bool(frames), "no telemetry")
    # Ten seconds of the rig's own time, not of the host's: a host that read late finds the rest on the line.
    end_ms = frames[0].uptime_ms + round(TELEMETRY_S * 1000) - t.link.telemetry_period_ms
    while frames[-1].uptime_ms < end_ms and (more := t.link.collect_telemetry(1, timeout=LATE_READ_S)):
        frames += more
    expect(len(frames) >= 95, f"{len(frames)} frames in 10 s of rig time")
    gaps = [b.uptime_ms - a.uptime_ms for a, b in itertools.pairwise(frames)]
    expect(max(gaps) <= 150, f"largest spacing {max(gaps)} ms")
    lost = t.link.stats.lost_frames - lost_before
    expect(lost == 0, f"{lost} frames lost")
    rate = 1000.0 * (len(frames) - 1) / (frames[-1].uptime_ms - frames[0].uptime_ms)
    return f"{rate:.2f} Hz, {len(frames)} frames, 0 lost"


SYNC_ERROR_MS = 2.0  # a clock fit's promise: each uptime placed within this of when the rig read it
DRIFT_MAX_PPM = 1000.0  # a crystal holds tens of ppm; a clock this far off does not run from one
SYNC_PINGS = 20


def time_sync(t: RigUnderTest) -> str:
    """The rig's clock can be fitted, judged by what each PING proves, not by the host's scheduling. The
    rig stamped each PING inside its round trip, however long the host made it: a steady clock has a
    line through every round trip (conformance/clock_lines.py). A clock that jumps or changes pace has
    none within SYNC_ERROR_MS; one whose every fitting line runs past DRIFT_MAX_PPM is off its crystal.
    The link's own fit, and how far it places a stamp outside its round trip, is the figure."""
    if not t.real_time:
        raise NotApplicable("the rig runs in virtual time: its clock stands still between steps, fitted to nothing")
    samples = []
    for _ in range(SYNC_PINGS):
        samples.append(t.link.ping())
        t.run_for(0.5, heartbeat=False)
    try:
        lines = clock_lines(samples)
    except ValueError as exc:  # the uptime stood still over 10 s
        raise CheckFailed(f"the rig's clock cannot be fitted: {exc}") from exc
    rtt = np.array([s.rtt for s in samples]) * 1e3
    expect(
        lines.outside_ms <= SYNC_ERROR_MS,
        f"no line through the {SYNC_PINGS} PINGs' round trips (rtt p50 {np.median(rtt):.2f} ms): the best misses "
        f"one by {lines.outside_ms:.1f} ms (bound {SYNC_ERROR_MS:g} ms): the rig's clock jumped or changed pace",
    )
    expect(
        lines.ppm_low <= DRIFT_MAX_PPM and lines.ppm_high >= -DRIFT_MAX_PPM,
        f"the rig's clock runs {lines.ppm:+.0f} ppm against the host's ({lines.ppm_low:+.0f} to "
        f"{lines.ppm_high:+.0f}; bound {DRIFT_MAX_PPM:g} ppm): is the MCU on its crystal?",
    )
    fit = t.link.sync.fit
    expect(fit is not None, "no clock fit")
    at = [t.link.sync.to_utc(s.mcu_us) for s in samples]
    fit_outside = max(max(0.0, s.host_send - u, u - s.host_recv) for s, u in zip(samples, at, strict=True)) * 1e3
    return (
        f"rtt p50 {np.median(rtt):.2f} ms, max {rtt.max():.1f} ms; stamps in {lines.tick_us} us ticks, "
        f"clock {lines.ppm:+.0f} ppm "
        f"({lines.ppm_low:+.0f} to {lines.ppm_high:+.0f}), a line within {lines.outside_ms:.3f} ms of every "
        f"round trip; the link's fit within {fit_outside:.3f} ms"
    )


def heater_limit(t: RigUnderTest) -> str:
    room = t.room_c()
    t.link.set(air=round((room + 15) * 100), hlim=200, heat=1, fan0=400)
    frames = t.run_for(3.0)
    t.safe()
    peak = max(f.heater_pct for f in frames)
    expect(peak <= 20.0, f"heater at {peak} % with a 20 % limit")
    expect(peak > 0, "the heater never came on")
    return f"heater peak {peak:.1f} % under a 20 % limit"


def pid_gains(t: RigUnderTest) -> str:
    """SET kp/ki/kd (in tenths) replace the chassis-air loop's gains: proportional only at 100 permille
    per degC, the heater's duty is 100 x the error, frame for frame; with every gain zero it stays off."""
    g = limits.GAIN_SCALE
    for key, top in (("kp", limits.AIR_KP_MAX), ("ki", limits.AIR_KI_MAX), ("kd", limits.AIR_KD_MAX)):
        nak = _refused(t, "SET", f"{key}={round(top * g) + 1}")
        expect((nak.reason, nak.detail) == ("RANGE", key), f"{key} over its maximum: NAK {nak.reason} {nak.detail}")
    target = round((t.room_c() + 3) * 100) / 100
    t.link.set(kp=round(100 * g), ki=0, kd=0)
    try:
        t.link.set(air=round(target * 100), hlim=limits.FULL_SCALE_PM, heat=1, fan0=400)
        frames = t.run_for(1.0)[3:]  # the frames after the loop has run a few ticks on the new gains
        errors = [f.heater_pct * 10 - 100 * (target - f.named("chassis_air").value) for f in frames]
        worst = max(abs(e) for e in errors)
        expect(worst <= 15, f"heater duty off 100 x the error by up to {worst:.0f} permille")
        t.link.set(kp=0)
        off = t.run_for(0.5)[2:]
        expect(all(f.heater_pct == 0 for f in off), "the heater ran with every gain zero")
    finally:
        t.link.set(kp=round(limits.AIR_KP * g), ki=round(limits.AIR_KI * g), kd=round(limits.AIR_KD * g))
        t.safe()
    return f"duty = 100 x error within {worst:.0f} permille over {len(frames)} frames; off with zero gains"


def _heat_then_fall_silent(t: RigUnderTest) -> tuple[float, int, list[Telemetry]]:
    """Heat, then let the host fall silent past the rig's timeout: the timeout the rig reports in HELLO
    (the host's keepalive follows it), the rig's time of the host's last word (µs), the frames since."""
    room = t.room_c()
    t.link.set(air=round((room + 5) * 100), hlim=300, heat=1, fan0=400)
    t.run_for(1.0)
    timeout_s = t.link.info.host_timeout_s if t.link.info is not None else limits.HOST_TIMEOUT_S
    last_word_us = t.link.ping().mcu_us
    return timeout_s, last_word_us, t.run_for(timeout_s + 1.0, heartbeat=False)


def heartbeat_failsafe(t: RigUnderTest) -> str:
    timeout_s, last_word_us, frames = _heat_then_fall_silent(t)  # the rig held to its word
    tripped = next((f for f in frames if f.faults), None)
    expect(tripped is not None, f"no safe state {timeout_s + 1:.0f} s after the host fell silent")
    assert tripped is not None
    reaction = tripped.uptime_ms / 1000 - last_word_us / 1e6
    expect(tripped.faults == Fault.HOST_LOST, f"faults {tripped.faults!r}")
    expect(tripped.heater_pct == 0 and min(tripped.fan_pct.values()) == 100, "not in the safe state")
    expect(reaction <= timeout_s + 0.25, f"safe state {reaction:.2f} s after the last host frame")
    t.link.command("CLEAR")  # the latch this check caused, judged: the rig is left as it was found
    return f"safe state {reaction:.2f} s after the host's last frame (deadline {timeout_s:g} s)"


def _first(t: RigUnderTest, seconds: float, done: Callable[[Telemetry], bool]) -> Telemetry | None:
    """The first frame within `seconds` of rig time for which done() holds, else None."""
    for _ in range(round(seconds / 0.5)):
        if (hit := next((f for f in t.run_for(0.5) if done(f)), None)) is not None:
            return hit
    return None


def _wiring_faults(t: RigUnderTest) -> tuple[list[str], str | None]:
    """The wiring diagnosis (thermrig.wiring) with the plant as the operator: what is miswired, one finding
    each, and what it stops: a finding that latches a fault (the fans held full, the heater off) leaves the
    steps that need it unjudged, and the heating checks after this one."""
    assert t.sim is not None
    frames = t.run_for(wiring.HEATER_OFF_WATCH_S)
    channels = frames[-1].channels
    heater = wiring.heater_off(frames)
    if heater is not None and heater.fault:
        return [str(heater)], "the heater heats at 0 % (wiring)"
    room = wiring.room(wiring.last_seconds(frames, wiring.ROOM_WATCH_S))
    found = [*room.findings, wiring.ambient(frames[-1])]
    reading = [n for n in wiring.thermocouples(frames[-1]) if n not in room.unreadable]
    for name in reading:  # a bead that does not read tells nothing when touched
        base = wiring.baseline(t.run_for(wiring.BASELINE_S), reading)
        t.sim.touch(name)
        try:
            rose = _first(t, wiring.TOUCH_WAIT_S, lambda f, b=base: bool(wiring.risen(f, b, wiring.TOUCH_RISE_C)))
        finally:
            t.sim.touch(name, held=False)
        _first(t, wiring.SETTLE_WAIT_S, lambda f, b=base: wiring.settled(f, b))
        found.append(wiring.touch(channels, name, base, rose))
    # A touched air bead with the heater off reads as a stuck heater, latched with fans full: cleared.
    t.link.command("CLEAR")
    last = t.run_for(0.5)[-1]
    if last.faults == Fault.FAN_STALL:  # from power-up: the safe state's full duty stops the fan
        found += wiring.stalled_fans(last).values()
    elif (refused := wiring.refused_pwm(last)) is not None:
        found.append(refused)
    lines = [str(f) for f in found if f.fault]
    if last.faults:
        if last.faults != Fault.FAN_STALL:
            lines.append(f"the fans not judged: {flag_names(last.faults)} latched holds them at full")
        return lines, f"{flag_names(last.faults)} latched (wiring)"
    keys = [c.key for c in channels.of_kind(ChannelKind.FAN_RPM)]
    low, high = wiring.FAN_LOW_PCT * 10, wiring.FAN_HIGH_PCT * 10
    for i, key in enumerate(keys):
        speeds = []
        for own, others in ((low, high), (high, low)):
            t.link.set(**{f"fan{j}": own if j == i else others for j in range(len(keys))})
            speeds.append(wiring.fan_speed(t.run_for(wiring.FAN_SPIN_S), key))
        if (fan := wiring.fan(i, *speeds)).fault:
            lines.append(str(fan))
    t.link.set(fan0=1000, fan1=1000)
    first, pulse = _heater_pulse(t)
    if pulse.fault:
        lines.append(str(pulse))
    return lines, "the heater does not heat (wiring)" if first is None else None


def _heater_pulse(t: RigUnderTest) -> tuple[Telemetry | None, Finding]:
    """Heat toward the chassis air + wiring.PULSE_TARGET_C: the first frame in which a bead rose
    wiring.PULSE_RISE_C (None: the heater does not heat), and what it says (the air must be first)."""
    seen = t.run_for(wiring.BASELINE_S)
    base = wiring.baseline(seen, wiring.thermocouples(seen[-1]))
    t.link.set(air=round((base[wiring.AIR] + wiring.PULSE_TARGET_C) * 100), hlim=1000, heat=1)
    try:
        first = _first(t, wiring.PULSE_MAX_S, lambda f: bool(wiring.risen(f, base, wiring.PULSE_RISE_C)))
    finally:
        t.link.set(heat=0)
    return first, wiring.heater_pulse(base, first)


def wiring_check(t: RigUnderTest) -> str:
    try:
        found, blocks = _wiring_faults(t)
    finally:
        t.safe()
        t.link.command("CLEAR")
    t.blocked = blocks
    expect(not found, "; ".join(found))
    return (
        "each bead raises its own channel, the ambient sensor answers, each tach follows its own fan, the"
        " heater warms the air"
    )


def latch_and_clear(t: RigUnderTest) -> str:
    _, _, silent = _heat_then_fall_silent(t)  # a fault of its own to latch: HOST_LOST
    expect(any(f.faults for f in silent), "no fault latched after the host fell silent while heating")
    frames = t.run_for(2.0)
    expect(all(f.faults for f in frames), "the fault did not stay latched")
    nak = _refused(t, "SET", "heat=1")
    expect(nak.reason == "STATE", f"heat=1 while faulted: NAK {nak.reason}")
    t.link.command("CLEAR")
    frames = t.run_for(1.0)
    expect(not frames[-1].faults and not frames[-1].heat_enabled, f"after CLEAR: {frames[-1].faults!r}")
    t.safe()
    return "latched 2 s, heat refused (STATE), cleared, heating off"


CHECKS = [
    Check("handshake", "HELLO reports identity, protocol 1 and the channel map; other versions refused", handshake),
    Check("commands", "every command acked, every bad value nakked with the specified reason", commands),
    Check("bad-frames", "bad CRC, malformed and over-long frames nakked, counted, harmless", bad_frames),
    Check("repeats", "a resent frame is answered again, not applied twice", repeats),
    Check("telemetry", "10 Hz telemetry for 10 s, no sequence gaps", telemetry),
    Check(
        "wiring",
        "the heater cold at 0 % and warming the air when on, each bead raises its own channel, the SHT3x answers,"
        " each tach follows its own fan",
        wiring_check,
        needs_sim=True,
    ),
    Check("time-sync", "PING round trip and clock-fit residual", time_sync),
    Check("heater-limit", "the heater never exceeds the duty limit, whatever the PID wants", heater_limit, heats=True),
    Check("pid-gains", "SET kp/ki/kd replace the air loop's gains; out-of-range gains refused", pid_gains, heats=True),
    Check("heartbeat-failsafe", "host silence while heating: safe state within 3 s", heartbeat_failsafe, heats=True),
    Check("latch-and-clear", "faults stay latched, heating refused until CLEAR", latch_and_clear, heats=True),
]
