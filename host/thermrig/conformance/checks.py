"""Protocol and safety checks that any rig must pass (docs/protocol.md, docs/safety.md)."""

from __future__ import annotations

import itertools
import statistics

import numpy as np

from thermrig.conformance.clock_lines import clock_lines
from thermrig.conformance.result import Check, CheckFailed, NotApplicable, expect
from thermrig.conformance.rig_under_test import RigUnderTest
from thermrig.link.rig_link import NakError
from thermrig.protocol import limits
from thermrig.protocol.channels import ChannelKind
from thermrig.protocol.frame import PROTO_VERSION, encode
from thermrig.protocol.messages import ChannelStatus, Fault, Nak, Telemetry, flag_names

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


TOUCH_S = 3.0  # a held bead (skin temperature) rises well over TOUCH_RISE_C within this
TOUCH_RISE_C = 2.0
FAN_SETTLE_S = 4.0  # a fan's speed settles after a duty change (spin-up about 1.5 s)
HEATER_OFF_WATCH_S = 10.0  # the heater at 0 %: the chassis air must not warm over this long ...
HEATER_OFF_RISE_C = 0.75  # ... by this much (a heater full from power-up: +1.25 C by 10 s)
UNSTABLE_C = 2.0  # a bead that spreads this much within a second reads garbled bits
AIR = "chassis_air"
_WIRING = ChannelStatus.OPEN | ChannelStatus.SHORT_GND | ChannelStatus.SHORT_VCC


def _heater_heats_at_zero(frames: list[Telemetry]) -> str | None:
    """With the heater at 0 % the chassis air must not warm: one that does is driven full at 0 %, its PWM
    inverted (or its switch welded). None when it stays cold, or when the air bead does not read."""
    if any(f.named(AIR).status for f in frames) or max(f.heater_pct for f in frames):
        return None
    first = statistics.fmean(f.named(AIR).value for f in frames[:5])
    last = statistics.fmean(f.named(AIR).value for f in frames[-5:])
    if last - first >= HEATER_OFF_RISE_C or any(Fault.HEATER_STUCK in f.faults for f in frames):
        return (
            f"the heater heats at 0 % (chassis air {first:.1f} -> {last:.1f} C in {HEATER_OFF_WATCH_S:g} s):"
            " its PWM is inverted (PWM_POLARITY_NORMAL in the board's overlay) or its switch is welded;"
            " switch off the heater supply"
        )
    return None


def _unreadable(frames: list[Telemetry], tcs: list[str]) -> list[str]:
    """The thermocouples that do not read, one line each, named for the wiring that causes it."""
    channels = frames[-1].channels
    found = []
    for name in tcs:
        key = channels.key_of(name)
        values = [f.named(name).value for f in frames]
        status = ChannelStatus(0)
        for f in frames:
            status |= f.named(name).status
        if all(f.named(name).status & ChannelStatus.RANGE for f in frames):
            found.append(
                f"{key} ({name}) reads {values[-1]:.1f} C, no temperature at all, steadily: its word arrives"
                " garbled the same way each read: check the SPI mode (0) and the bit order (MSB first)"
            )
        elif (
            status & ChannelStatus.JUMP
            or len({f.named(name).status & _WIRING for f in frames}) > 1
            or (max(values) - min(values) >= UNSTABLE_C)
        ):
            found.append(
                f"{key} ({name}) reads unstable values ({min(values):.1f} to {max(values):.1f} C): check its SPI"
                " clock (the MAX31855 takes up to 5 MHz) and the SCK and SO wires"
            )
        elif status == ChannelStatus.OPEN:
            found.append(
                f"{key} ({name}) reads {values[-1]:.1f} C, open, while the others read room temperature:"
                f" check {key}'s chip select (its wire, and its polarity: active low), its SPI mode (0),"
                " then the bead's plug"
            )
        elif status & _WIRING:
            found.append(f"{key} ({name}) reads {flag_names(status)}: check the bead and its leads")
    return found


def _wiring_faults(t: RigUnderTest) -> tuple[list[str], str | None]:
    """What is miswired, one line each (a heater that heats at 0 %, a thermocouple that does not read, a
    bead that raises another channel, an ambient sensor that does not answer, a fan whose speed does not
    follow its own duty), and what it stops: a finding that latches a fault (the fans held full, the
    heater off) leaves the steps that need it unjudged, and the heating checks after this one."""
    assert t.sim is not None
    found = []
    frames = t.run_for(HEATER_OFF_WATCH_S)
    channels = frames[-1].channels
    heater = _heater_heats_at_zero(frames)
    if heater is not None:
        return [heater], "the heater heats at 0 % (wiring)"
    if not frames[-1].named("ambient_t").ok:
        found.append(
            "the ambient sensor does not answer: check its I2C address (0x44), SDA/SCL, 3.3 V"
            " and the bus clock (up to 1 MHz); a firmware that reads it sooner than 15 ms after starting a"
            " measurement gets no answer either"
        )
    tcs = [c.name for c in channels.of_kind(ChannelKind.THERMOCOUPLE)]
    dead = _unreadable(frames[-10:], tcs)
    found += dead
    reading = [n for n in tcs if not any(line.startswith(f"{channels.key_of(n)} (") for line in dead)]
    for name in reading:  # a bead that does not read tells nothing when touched
        base = {n: frames[-1].named(n).value for n in tcs}
        t.sim.touch(name)
        try:
            frames = t.run_for(TOUCH_S)
        finally:
            t.sim.touch(name, held=False)
        risen = [n for n in reading if frames[-1].named(n).value - base[n] >= TOUCH_RISE_C]
        if risen != [name]:
            shown = ", ".join(f"{n} ({channels.key_of(n)})" for n in risen) or "no channel"
            found.append(f"the {name} bead ({channels.key_of(name)}) raised {shown}: chip selects swapped?")
        frames = t.run_for(TOUCH_S)  # the bead cools back before the next touch
    # A touched air bead with the heater off reads as a stuck heater, latched with fans full: cleared.
    t.link.command("CLEAR")
    last = t.run_for(0.5)[-1]
    held = last.faults
    if held == Fault.FAN_STALL:  # from power-up: the safe state's full duty stops the fan
        for i, key in enumerate(last.rpm):
            if last.rpm[key].status & ChannelStatus.STALL:
                found.append(
                    f"fan{i} stands still at full duty (FAN_STALL latched): its PWM is inverted"
                    " (PWM_POLARITY_NORMAL), the fan is seized, or its tach wire or pull-up is missing"
                )
    elif held:
        if Fault.OUTPUT_ERROR in held:
            found.append(
                "the PWM driver refuses an output's duty (OUTPUT_ERROR latched): check each PWM's channel and"
                " frequency against its timer (the heater's 1 kHz needs a 32-bit timer; a 16-bit timer at 96 MHz"
                " holds 1465 Hz at the least)"
            )
        found.append(f"the fans not judged: {flag_names(held)} latched holds them at full")
    if held:
        return found, f"{flag_names(held)} latched (wiring)"
    keys = [c.key for c in channels.of_kind(ChannelKind.FAN_RPM)]
    for i, key in enumerate(keys):
        speeds = []
        for own, others in ((400, 1000), (1000, 400)):
            t.link.set(**{f"fan{j}": own if j == i else others for j in range(len(keys))})
            speeds.append(t.run_for(FAN_SETTLE_S)[-1].rpm[key].value)
        if speeds[0] > speeds[1] * 1.2:
            found.append(
                f"{key} slows as fan{i}'s duty rises and the others' falls: "
                f"fan{i}'s PWM and tach are from different fans"
            )
        elif not speeds[1] > speeds[0] * 1.2:
            found.append(
                f"{key} does not follow fan{i}'s duty ({speeds[0]:.0f} -> {speeds[1]:.0f} rpm): its PWM"
                f" reaches no fan or comes at a frequency the fan ignores: check fan{i}'s PWM channel and its wire (a"
                " 4-wire fan runs full with its PWM input open) and the PWM's frequency (a 4-wire fan takes 21-28 kHz;"
                " outside that it runs full)"
            )
    t.link.set(fan0=1000, fan1=1000)
    heater = _heater_pulse(t)
    if heater is not None:
        found.append(heater)
        return found, "the heater does not heat (wiring)"
    return found, None


PULSE_RISE_C = 1.0  # a heater pulse: the chassis air rises this much ...
PULSE_MAX_S = 40.0  # ... within this long (the bring-up's pulse)


def _heater_pulse(t: RigUnderTest) -> str | None:
    """Heat toward the chassis air +5 C: the air must rise PULSE_RISE_C within PULSE_MAX_S. None when it
    does; else what to check (the heater's supply, switch and the PWM that drives it)."""
    start = t.run_for(0.5)[-1].named(AIR).value
    t.link.set(air=round((start + 5.0) * 100), hlim=1000, heat=1)
    try:
        for _ in range(round(PULSE_MAX_S)):
            if t.run_for(1.0)[-1].named(AIR).value - start >= PULSE_RISE_C:
                return None
    finally:
        t.link.set(heat=0)
    return (
        f"the heater does not heat (chassis air +{PULSE_RISE_C:g} C not reached in {PULSE_MAX_S:g} s): its PWM may"
        " reach no heater: check the heater's PWM channel (the timer output its switch is wired to) and a frequency"
        " the switch follows: 1 kHz at most; then its supply, the thermal fuse and the switch on the heater pin"
    )


def wiring(t: RigUnderTest) -> str:
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
        wiring,
        needs_sim=True,
    ),
    Check("time-sync", "PING round trip and clock-fit residual", time_sync),
    Check("heater-limit", "the heater never exceeds the duty limit, whatever the PID wants", heater_limit, heats=True),
    Check("pid-gains", "SET kp/ki/kd replace the air loop's gains; out-of-range gains refused", pid_gains, heats=True),
    Check("heartbeat-failsafe", "host silence while heating: safe state within 3 s", heartbeat_failsafe, heats=True),
    Check("latch-and-clear", "faults stay latched, heating refused until CLEAR", latch_and_clear, heats=True),
]
