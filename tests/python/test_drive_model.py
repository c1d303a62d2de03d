"""The virtual drive's model: throttle walk with hysteresis on the controller temperature, power per
state, TMT counters, fill state and spare area, and its smart-log read by the real nvme-cli parser."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from thermrig.drive.smart import parse_smart_log
from thermrig.dut.replay import Pattern
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.hardware.profiles import ProfileError
from thermrig.virtual_drive.drive_model import DriveModel

SEQ_WRITE = Pattern(write=True, random=False, bs=128 * 1024)
RAND_WRITE = Pattern(write=True, random=True, bs=4096)


def model(**over: float) -> DriveModel:
    p = load_drive_profile("950pro_512")
    return DriveModel(replace(p, tmt1_c=70.0, tmt2_c=85.0, hysteresis_c=3.0, step_s=1.0, **over))


def run(m: DriveModel, ctrl_c: float, seconds: float, busy: bool = True) -> None:
    """Hold the controller at ctrl_c for `seconds`, the host moving whatever the cap allows."""
    for _ in range(round(seconds / 0.1)):
        m.tick(0.1, ctrl_c, ctrl_c - 5.0, m.cap_rate() * 0.1 if busy else 0.0)


def test_the_light_throttle_trims_its_power_on_the_controller_and_leaves_below_the_hysteresis() -> None:
    m = model(throttle_gain=0.1)
    m.pattern = SEQ_WRITE
    ps1, ps2 = (s.max_w for s in m.profile.states[1:3])
    run(m, 60.0, 5)
    assert m.state == 0 and m.tmt1_count == 0 and m.cap_fraction() == 1.0
    run(m, 71.0, 1.05)  # tmt1 reached: the light throttle starts at PS1's power
    assert m.state == 1 and m.tmt1_count == 1 and m.allow_w == pytest.approx(ps1)
    run(m, 71.0, 10)  # 1 K above tmt1 for 10 s: 0.1 W per K per second off the allowance
    assert m.allow_w == pytest.approx(ps1 - 1.0) and m.state == 1
    p = m.profile
    assert m.cap_fraction() == pytest.approx((ps1 - 1.0 - p.idle_power_w) / (p.write_power_w - p.idle_power_w))
    run(m, 72.0, 8)  # hotter: down past PS2's power
    assert m.allow_w < ps2 and m.state == 2
    run(m, 70.0, 3)  # at tmt1: the allowance holds, and so does the state
    held = m.allow_w
    assert m.allow_w == pytest.approx(held) and m.state == 2
    run(m, 68.0, 60)  # within the hysteresis band: the allowance climbs back to full power, still throttled
    assert m.allow_w == pytest.approx(p.states[0].max_w) and m.state == 1 and m.cap_fraction() == 1.0
    run(m, 66.5, 1.0)  # below tmt1 - hysteresis at full allowance: full speed
    assert m.state == 0 and m.allow_w is None
    run(m, 71.0, 1.0)
    assert m.tmt1_count == 2
    assert [s for _, s in m.transitions] == [1, 2, 1, 0, 1]


def test_a_throttled_drive_under_constant_load_settles_in_one_power_state() -> None:
    # Seed 004: the bare 950 Pro spends the hour's steady state in one power state. The controller here
    # is a first-order node heated by the drive's power: the allowance settles where it holds tmt1.
    m = model(throttle_gain=0.1)
    m.pattern = SEQ_WRITE
    ctrl, states = 40.0, []
    for k in range(6000):
        power = m.tick(0.1, ctrl, ctrl - 5.0, m.cap_rate() * 0.1)
        ctrl += (25.0 + 8.0 * power - ctrl) * 0.1 / 2.0  # 8 K/W to 25 C air, 2 s time constant
        if k >= 4000:
            states.append(m.state)
    assert set(states) == {1} and ctrl == pytest.approx(70.0, abs=0.3)


def test_heavy_throttle_above_tmt2_counts_tmt2_and_its_time() -> None:
    m = model()
    m.pattern = SEQ_WRITE
    run(m, 60.0, 1)
    run(m, 90.0, 10)
    assert m.state == len(m.profile.states) - 1
    assert m.tmt2_count == 1
    assert m.tmt2_time == pytest.approx(9.0, abs=0.2)  # from the first evaluation, 1 s in
    log = parse_smart_log(m.smart_log_json()).fields()
    assert log["tmt2_count"] == 1 and log["tmt2_time_s"] == int(m.tmt2_time)  # whole seconds elapsed


def test_power_follows_work_and_each_state_caps_it_at_its_published_power() -> None:
    m = model()
    m.pattern = SEQ_WRITE
    p = m.profile
    assert m.cap_rate() == pytest.approx(p.seq_write_bps)
    assert m.tick(0.1, 50.0, 45.0, p.seq_write_bps * 0.1) == pytest.approx(p.write_power_w)
    assert m.tick(0.1, 50.0, 45.0, 0.0) == pytest.approx(p.idle_power_w)
    for state in p.states:  # the throttle's allowance at each state's power (no re-evaluation in between)
        m.allow_w = state.max_w
        assert m.tick(0.1, 50.0, 45.0, m.cap_rate() * 0.1) == pytest.approx(state.max_w)


def test_random_writes_slow_to_the_steady_state_once_the_spare_area_is_used() -> None:
    m = model(capacity_bytes=10 * 2**20, spare_bytes=2 * 2**20)
    m.pattern = SEQ_WRITE
    run(m, 40.0, 1)  # 1.5 GB/s: fills 10 MiB at once
    assert m.filled == m.profile.capacity_bytes
    m.pattern = RAND_WRITE
    assert m.peak_rate() == pytest.approx(m.profile.rand_write_iops * 4096)
    run(m, 40.0, 0.2)
    assert m.is_steady_state
    assert m.peak_rate() == pytest.approx(m.profile.steady_rand_write_iops * 4096)
    m.format()
    assert not m.is_steady_state and m.filled == 0
    m.precondition()
    assert m.is_steady_state


def test_smart_log_reads_like_nvme_cli_composite_from_the_nand_side_not_the_controller() -> None:
    m = model()
    m.pattern = SEQ_WRITE
    m.tick(0.1, 80.0, 61.4, 1e6)  # the controller throttles at 80 C while the composite sensor reads 61
    temps = parse_smart_log(m.smart_log_json())
    assert temps.composite_c == pytest.approx(61.4, abs=0.6)  # whole Kelvin, as drives report
    assert temps.sensors_c == (None,) * 8  # composite only, like the 950 Pro
    assert m.smart_log()["data_units_written"] == 1  # units of 512,000 bytes, as NVMe counts
    assert temps.fields()["power_state"] == m.state  # the virtual drive reports its state; analysis reads it


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('["PS1", ', '["PS1", 9', "falling power"),  # PS1 at 95.8 W, above PS0
        ("tmt2_c = ", "tmt2_c = 41 #", "tmt2_c must be above tmt1_c"),
        ("capacity_gb = 512", 'capacity_gb = "big"', "capacity_gb = 'big', expected a number"),
        ('model = "Samsung SSD 950 PRO 512GB"', "model = 3", "model must be a non-empty string"),
    ],
)
def test_bad_drive_profiles_name_the_file_section_and_key(
    hardware_copy: Path, old: str, new: str, message: str
) -> None:
    path = hardware_copy / "drives.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ProfileError, match=r"drives.toml:\d+: \[950pro_512\]") as err:
        load_drive_profile("950pro_512")
    assert message in str(err.value)


def test_the_drive_monitor_reads_the_virtual_drive_like_a_real_one() -> None:
    from thermrig.drive.monitor import DriveMonitor, smart_json_source

    m = model()
    m.pattern = SEQ_WRITE
    run(m, 75.0, 3)  # throttling: the controller above tmt1
    got: list[dict[str, float | int]] = []
    monitor = DriveMonitor(smart_json_source(m.smart_log_json), lambda fields, ns: got.append(fields))
    fields = monitor.sample()
    assert fields["composite_c"] == pytest.approx(70.0, abs=0.6)  # the board, 5 C under the controller
    assert fields["tmt1_count"] == 1 and fields["tmt1_time_s"] >= 1
    assert not any(k.startswith("sensor") for k in fields)  # sensors 1-8 not implemented
    monitor.start()
    assert got == [fields]  # read once before start() returns: the account from before the run's work
    deadline = time.monotonic() + 10  # then on the next whole second
    while len(got) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    monitor.stop()
    assert len(got) >= 2 and got[1] == fields


def test_unmapped_lbas_are_spare_area_random_writes_run_faster_and_trim_adds_to_it() -> None:
    mib = 2**20
    m = model(capacity_bytes=64 * mib, spare_bytes=4 * mib)
    m.precondition()  # every LBA mapped: the profile's own steady state
    assert m.gc_write_iops() == pytest.approx(m.profile.steady_rand_write_iops)
    full = m.serve(True, 12 * mib, 4096)
    m.fill(48 * mib)  # a quarter of the LBAs left unwritten: "25 % spare area"
    assert m.filled == 48 * mib and not m.is_steady_state
    fresh = m.serve(True, 4096 * 7, 4096)
    k = 0
    while not m.is_steady_state:  # random overwrites inside the 75 % use up the fresh NAND
        m.serve(True, (k * 7919 % (48 * mib // 4096)) * 4096, 4096)
        k += 1
    assert k * 4096 == pytest.approx(20 * mib, abs=64 * 1024)  # 64 + 4 - 48 MiB, to a chunk
    spare = m.serve(True, 4096 * 9, 4096)
    assert fresh.occupancy < spare.occupancy < full.occupancy  # GC-bound, but far less than when full
    assert m.profile.steady_rand_write_iops * 2 < m.gc_write_iops() <= m.profile.rand_write_iops
    before = m.gc_write_iops()
    assert m.trim(24 * mib, 24 * mib).occupancy > 0
    assert m.filled == 24 * mib and m.gc_write_iops() > before


def test_queue_depth_service_times_follow_the_data_sheet() -> None:
    m = model()
    p = m.profile
    read, write = m.serve(False, 0, 4096), m.serve(True, 8192 * 1000, 4096)
    assert 1 / read.latency == pytest.approx(p.qd1_rand_read_iops)  # QD1: one at a time
    assert 1 / read.occupancy == pytest.approx(p.rand_read_iops)  # deep queues: the peak
    assert 1 / write.latency == pytest.approx(p.qd1_rand_write_iops)
    assert 1 / write.occupancy == pytest.approx(p.rand_write_iops)
    seq = m.serve(True, 0, 128 * 1024)
    assert 128 * 1024 / seq.occupancy == pytest.approx(p.seq_write_bps)
    m.allow_w = p.states[-1].max_w  # the heavy throttle: the same latency, a lower ceiling
    slow = m.serve(True, 128 * 1024, 128 * 1024)
    assert slow.latency == seq.latency
    assert seq.occupancy / slow.occupancy == pytest.approx(m.cap_fraction(True))


def test_a_read_continuing_the_last_read_comes_from_the_read_ahead_unless_a_write_came_between() -> None:
    m = model()
    p, bs = m.profile, 128 * 1024
    first = m.serve(False, 0, bs)  # a stream starts: the NAND's QD1 latency
    assert first.latency == pytest.approx(1 / p.qd1_rand_read_iops + (bs - 4096) / p.seq_read_bps)
    ahead = m.serve(False, bs, bs)  # continues it: transfer time only, QD1 runs at the sequential rate
    assert ahead.latency == pytest.approx(bs / p.seq_read_bps) and ahead.latency < first.latency / 2
    m.serve(True, 10 * bs, bs)  # a write in between holds up the read-ahead
    assert m.serve(False, 2 * bs, bs).latency == pytest.approx(first.latency)
    assert m.serve(False, 7 * bs, bs).latency == pytest.approx(first.latency)  # elsewhere: not read ahead
