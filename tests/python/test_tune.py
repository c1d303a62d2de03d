"""`thermrig rig tune` on the real firmware (rigsim, stepped) against simulated chassis unlike the
default one: the relay, the model, the gains stored for the rig and sent by the next HELLO, and a
chassis-air step with them judged as the hold figures are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner
from waiting import advance_and_read, wait_for

from thermrig.cli.main import app
from thermrig.dut.faults import FaultKind
from thermrig.dut.pacing import Pacing
from thermrig.link.rig_link import RigLink
from thermrig.link.stored_gains import Gains, GainsError, StoredGains, gains_path, load_gains, rig_key, save_gains
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.testbed import SimulatedRigSpec, open_testbed
from thermrig.tune.air_step import air_step
from thermrig.tune.auto import auto_tune
from thermrig.tune.relay import RelayPlan, TuneError, relay

SETTLE_S = 180.0  # the hold figures: a step settles (±0.5 °C) within this ...
OVERSHOOT_C = 1.0  # ... and overshoots by less
STEP_S = 500.0

# Each chassis differs from the default by 2x one way or the other: (scales, the step in °C over the room).
# The step is +20 °C at fan 40 % where the firmware lets the heater make it. With half the heater, or twice
# the air's heat capacity, full power raises the air by 0.13 °C/s at most, less the element's lag: at the
# edge of the firmware's runaway check (Klipper's: 2 °C gained per 20 s while over 5 °C short), which
# trips on steps over about +8 °C whatever the gains (+10 °C: 2 runs in 5 with half the heater; +15 °C:
# 1 in 6 with twice the air), so there the step is +8 °C. Half the heater also reaches only 23 °C over the
# room at full power (13 °C at fan 100 %). "hot" is the corner where all three make the loop faster at once.
CHASSIS = {
    "default": ({}, 20.0),
    "heater x2": ({"heater": 2.0}, 20.0),
    "heater x0.5": ({"heater": 0.5}, 8.0),
    "air x2": ({"air": 2.0}, 8.0),
    "air x0.5": ({"air": 0.5}, 20.0),
    "fan x2": ({"fan": 2.0}, 20.0),
    "fan x0.5": ({"fan": 0.5}, 20.0),
    "hot": ({"heater": 2.0, "air": 0.5, "fan": 0.5}, 20.0),
}


def tune_and_store(scales: dict[str, float]) -> Gains:
    """Tune a simulated rig on the chassis and store the gains for it, as `rig tune --port` does."""
    with SimulatedRigSpec(chassis_scales=scales).rig() as sim, RigLink(sim.port) as link:
        info = link.hello()
        result = sim.run_alongside(link, lambda: auto_tune(link, RelayPlan()))
        save_gains(rig_key(info, link.usb_serial), result.gains, result.note(RelayPlan()))
    assert result.model.rms_c < 1.0, result.model.describe()  # 0.07-0.52 °C seen
    return result.gains


def step_after_connect(scales: dict[str, float], rise_c: float) -> tuple[RigLink, float | None, float]:
    """A fresh rig on the chassis, opened as the commands a user runs open it (whatever gains are stored
    are sent after the HELLO), and a step."""
    with open_testbed(SimulatedRigSpec(chassis_scales=scales), stored_gains=True) as bed:
        link = bed.link
        r = bed.run(lambda: air_step(link, rise_c, STEP_S))
    return link, r.settle_s, r.overshoot_c


@pytest.mark.parametrize("name", list(CHASSIS))
def test_tuned_gains_hold_a_step_on_each_chassis(name: str, isolated_env: dict[str, str]) -> None:
    scales, rise = CHASSIS[name]
    gains = tune_and_store(scales)
    link, settle, overshoot = step_after_connect(scales, rise)
    assert link.gains is not None and link.gains.gains == gains  # sent by the HELLO ...
    assert [e.kind for e in link.events].count("gains") == 1  # ... and said so
    assert settle is not None and settle < SETTLE_S, f"{name}: {gains.describe()} settles in {settle} s"
    assert overshoot < OVERSHOOT_C, f"{name}: {gains.describe()} overshoots {overshoot:.2f} °C"


def test_without_tuning_the_hot_chassis_overshoots(isolated_env: dict[str, str]) -> None:
    """The firmware's defaults on the corner chassis: the step overshoots by a degree or more (the tuned
    gains of the test above hold it under one)."""
    scales, rise = CHASSIS["hot"]
    link, _, overshoot = step_after_connect(scales, rise)
    assert link.gains is None and "gains" not in [e.kind for e in link.events]  # nothing stored: defaults
    assert overshoot >= OVERSHOOT_C


def test_a_step_is_timed_from_the_frame_that_carries_it_however_late_the_host_reads(
    isolated_env: dict[str, str], hardware_copy: Path
) -> None:
    """The same step on the same chassis, once read as it comes and once with 8 s of frames queued unread
    before it (a busy host): the same settling time, not 8 s longer. The thermocouples without noise: with
    it, the air the step starts from and the band's last crossing hang on the frame a step lands at, which
    a busy host moves (47.3 to 48.6 s for steps landing 0 to 8 s apart, with no backlog at all)."""
    chassis = hardware_copy / "chassis.toml"
    text, n = re.subn(r"(?m)^tc_noise_c = \S+", "tc_noise_c = 0", chassis.read_text())
    assert n == 1, "chassis.toml has no tc_noise_c"
    chassis.write_text(text)
    responses = []
    for backlog_s in (0, 8):
        with SimulatedRigSpec().rig() as sim, RigLink(sim.port) as link:
            link.hello()
            q = link.subscribe()  # held open: the frames the step's own subscription is behind by
            sim.run_alongside(link, lambda q=q: q.get(timeout=10))
            for _ in range(backlog_s):
                link.ping()
                sim.advance(1.0)
            link.subscribe = lambda q=q: q  # type: ignore[method-assign]  # the step reads from behind
            responses.append(sim.run_alongside(link, lambda link=link: air_step(link, 10.0, 240.0)))
    fresh, late = responses
    assert fresh.settle_s is not None and late.settle_s is not None
    assert abs(late.settle_s - fresh.settle_s) < 1.0, (fresh.settle_s, late.settle_s)


def test_the_relay_keeps_its_heater_bound_and_ends_with_the_heater_off(isolated_env: dict[str, str]) -> None:
    plan = RelayPlan(heater_pct=60.0, rise_c=10.0)
    with SimulatedRigSpec(chassis_scales={}).rig() as sim, RigLink(sim.port) as link:
        link.hello()
        rec = sim.run_alongside(link, lambda: relay(link, plan, Gains.firmware_default()))
        last = advance_and_read(sim, link)
        assert not last.heat_enabled and not last.faults
    assert max(rec.heater_pm) <= 600 and max(rec.heater_pm) > 0
    assert len(rec.switch_off_s) == plan.cycles + 2
    assert max(rec.air_c) < rec.setpoint_c + 2  # an oscillation around the setpoint, no excursion
    ku, tu, a = rec.ultimate()
    assert ku > 0 and tu > 0 and a > 0


def test_a_heater_that_does_not_warm_the_air_trips_the_firmware_runaway_check(isolated_env: dict[str, str]) -> None:
    """The relay keeps the firmware's runaway check meaningful: an open heater (or one aimed elsewhere)
    while tuning latches HEATER_RUNAWAY as on any heat-up, and the tune stops with the heater off."""
    with SimulatedRigSpec(chassis_scales={}).rig() as sim, RigLink(sim.port) as link:
        link.hello()
        sim.faults.inject("heater-open")
        with pytest.raises(TuneError, match="HEATER_RUNAWAY"):
            sim.run_alongside(link, lambda: relay(link, RelayPlan(), Gains.firmware_default()))
        assert sim.virtual_time < 300  # within the check's 20 s + 120 °C·s, not the relay's time limit
        assert not advance_and_read(sim, link).heat_enabled


def test_a_setpoint_the_heater_cannot_reach_is_named(isolated_env: dict[str, str]) -> None:
    """Half the heater: at most 23 °C over the room at fan 40 %. The air's rise slows until the firmware's
    runaway check trips (the relay keeps it watching), and the error says why."""
    plan = RelayPlan(rise_c=30.0)
    with (
        SimulatedRigSpec(chassis_scales={"heater": 0.5}).rig() as sim,
        RigLink(sim.port) as link,
        pytest.raises(TuneError, match=r"HEATER_RUNAWAY.*stopped rising at .* short of .*\(\d+\.\d °C more\)"),
    ):
        link.hello()
        sim.run_alongside(link, lambda: relay(link, plan, Gains.firmware_default()))


def test_the_gains_file_reads_back_bounded_and_bad_ones_are_located(isolated_env: dict[str, str]) -> None:
    with pytest.raises(TuneError, match="heater duty 120"):
        RelayPlan(heater_pct=120.0)
    assert load_gains("board-fw") is None
    path = save_gains("board-fw", Gains(5000.0, 12.345, -3.0), 'tuned "here"')
    stored = load_gains("board-fw")
    assert stored is not None and stored.path == path == gains_path("board-fw")
    assert stored.gains == Gains(2000.0, 12.3, 0.0) and stored.note == 'tuned "here"'
    assert stored.gains.set_args() == {"kp": 20000, "ki": 123, "kd": 0}
    path.write_text("[air_pid]\nkp = 400\nki = 15\nkd = 'x'\n")
    with pytest.raises(GainsError, match=r"board-fw.toml.*kd"):
        load_gains("board-fw")


def test_rig_tune_sim_reports_the_gains_and_stores_nothing(isolated_env: dict[str, str]) -> None:
    out = CliRunner().invoke(app, ["rig", "tune", "--sim", "--heater-x", "2", "--check", "20"])
    assert out.exit_code == 0, out.output
    assert "tuned (SIMC)" in out.output and "not stored" in out.output
    assert "check step: settles" in out.output
    assert not (gains_path("x").parent).exists()
    refused = CliRunner().invoke(app, ["rig", "tune", "--port", "/dev/null", "--air-x", "2"])
    assert refused.exit_code != 0 and "go with --sim" in refused.output


def test_stored_gains_are_sent_when_the_opener_asks_and_said(
    isolated_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """A testbed opened with stored_gains (as every command a user runs on a rig opens it) sends the gains
    stored for its rig after the HELLO and says so; one opened without them (a test, the conformance
    suite) sends none, stored or not."""
    with open_testbed(SimulatedRigSpec(), stored_gains=True) as bed:
        key = rig_key(bed.info, bed.link.usb_serial)
        assert bed.link.gains is None and "gains" not in caplog.text  # none stored: the firmware's, silently
    path = save_gains(key, Gains(123.4, 5.6, 7.8), "by hand")
    with caplog.at_level("INFO", logger="thermrig.link.rig_link"):
        with open_testbed(SimulatedRigSpec(), stored_gains=True) as bed:
            assert bed.link.gains is not None and bed.link.gains.gains == Gains(123.4, 5.6, 7.8)
            assert [e.kind for e in bed.link.events].count("gains") == 1
        assert f"sent the stored air-loop gains kp 123.4, ki 5.60, kd 7.8 ({path})" in caplog.text
        caplog.clear()
        with open_testbed(SimulatedRigSpec()) as bed:  # not asked: the file is not read, nothing sent
            assert bed.link.gains is None and "gains" not in [e.kind for e in bed.link.events]
        assert "gains" not in caplog.text
    path.write_text("[air_pid]\nkp = 99999\nki = 1\nkd = 1\n")  # a broken file: said, and the defaults
    with open_testbed(SimulatedRigSpec(), stored_gains=True) as bed:
        assert bed.link.gains is None and "gains" not in [e.kind for e in bed.link.events]
    assert "keeps its firmware's air-loop gains" in caplog.text and "kp" in caplog.text


def test_rig_tune_on_a_port_stores_the_gains_and_the_next_connection_sends_them(
    isolated_env: dict[str, str],
) -> None:
    """The command as on a real rig: a simulated one running by itself at 20x, kept alive by the link."""
    with SimulatedRig(SimConfig(pacing=Pacing.accelerated(20))) as sim:
        out = CliRunner().invoke(app, ["rig", "tune", "--port", sim.port, "--speed", "20"])
        assert out.exit_code == 0, out.output
        files = list(gains_path("x").parent.glob("*.toml"))
        assert len(files) == 1 and f"stored in {files[0]}" in out.output.replace("\n", "")
        stored = load_gains(files[0].stem)
        assert stored is not None and stored.gains != Gains.firmware_default() and "SIMC" in stored.note
        again = CliRunner().invoke(app, ["rig", "info", "--port", sim.port])
        assert again.exit_code == 0, again.output
        assert f"sent the stored air-loop gains {stored.gains.describe()}" in again.output


def test_a_rig_that_resets_gets_its_stored_gains_again(isolated_env: dict[str, str]) -> None:
    """A reset rig boots on its firmware's gains: the link's re-handshake sends the ones its opener gave
    it again."""
    with SimulatedRigSpec(chassis_scales={}).rig() as sim, RigLink(sim.port) as link:
        info = link.hello()
        path = save_gains(rig_key(info, link.usb_serial), Gains(300.0, 10.0, 150.0), "by hand")
        link.send_gains(StoredGains(Gains(300.0, 10.0, 150.0), "by hand", path))
        assert [e.kind for e in link.events].count("gains") == 1
        sim.faults.inject(FaultKind.MCU_RESET)
        sim.advance(0.1)  # the rig reboots and reports at its first tick
        assert wait_for(lambda: link.stats.mcu_resets == 1)
        assert wait_for(lambda: [e.kind for e in link.events].count("gains") == 2)
        assert link.gains is not None and link.gains.gains == Gains(300.0, 10.0, 150.0)
