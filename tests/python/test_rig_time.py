"""Less waiting for the same result (docs/campaigns.md, "Less waiting"): the exponential-fit equilibrium
and the baseline from the equilibrium's tail judged on a chassis heat step of the stepped simulated rig;
a driven change of chassis condition against one waited out on it; the blocked run orders; the planner's
estimates from recorded runs; a campaign on the simulated rig with the new options end to end
(manifests: rig time per phase, the design, the driven transition, the skipped cool-down; the ETA's
source)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from campaign_helpers import file_drive, manifests, run_args, thermrig

from thermrig.campaign import run_phases as phases_module
from thermrig.campaign.equilibrium import EquilibriumWatch, FitWatch, exp_fit, tail_mean
from thermrig.campaign.history import History
from thermrig.campaign.plan import make_plan, nearly_same
from thermrig.campaign.progress import Progress, ProgressDisplay
from thermrig.campaign.run_phases import Phases
from thermrig.campaign.spec import Campaign, Equilibrium, load_campaign
from thermrig.campaign.transition import Drive, Push, drive_for, level_of
from thermrig.cli.durations import hms
from thermrig.dut.pacing import Pacing
from thermrig.hardware.chassis_profiles import load_profile
from thermrig.hardware.profiles import load_slot
from thermrig.link.rig_link import RigLink
from thermrig.protocol.messages import Telemetry
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig
from thermrig.testbed import Testbed

CHANNELS = ("chassis_air", "drive_ctrl", "drive_nand")
STEP_S = 900


@pytest.fixture(scope="module")
def step() -> Iterator[list[Telemetry]]:
    """Every frame of STEP_S rig seconds of the stepped simulated rig after dual_gpu_load is set from cold."""
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        link.set(**load_profile("dual_gpu_load").set_args())
        frames: list[Telemetry] = []
        for _ in range(STEP_S):
            step_second(sim, link, frames)
        assert not any(f.faults for f in frames)
        yield frames


def step_second(sim: SimulatedRig, link: RigLink, frames: list[Telemetry]) -> list[Telemetry]:
    """One rig second on the stepped rig: the host's ping, the plant advanced a second, its frames (10 at
    10 Hz, waited for up to 5 s of wall time) added to `frames` and returned."""
    link.ping()
    sim.advance(1.0)
    new = link.collect_telemetry(10, timeout=5)
    frames.extend(new)
    return new


def settle(
    sim: SimulatedRig,
    link: RigLink,
    frames: list[Telemetry],
    rule: Equilibrium,
    args: dict[str, int],
    limit: int = 60_000,
) -> float:
    """`args` set, then rig seconds on the stepped rig until the fit rule holds (or `frames` holds `limit`):
    the drive controller's level the rule stopped at, its mean over the last 30 s."""
    link.set(**args)
    watch = FitWatch(rule)
    while not watch.reached() and len(frames) < limit:
        for tel in step_second(sim, link, frames):
            watch.add(tel)
    level = watch.tail_mean("drive_ctrl", 30)
    assert level is not None
    return level


def first_reached(watch: EquilibriumWatch | FitWatch, frames: list[Telemetry]) -> int | None:
    for i, tel in enumerate(frames):
        watch.add(tel)
        if watch.reached():
            return i
    return None


def test_exp_fit_finds_the_final_value_of_a_curve_from_its_first_minute() -> None:
    t = np.arange(0, 60, 0.1)
    y = np.round((50.0 - 10.0 * np.exp(-t / 25.0)) * 4) / 4  # a thermocouple's 0.25 °C steps
    fit = exp_fit(t, y)
    assert abs(fit.final - 50.0) < 0.3 and abs(fit.tau_s - 25.0) < 8
    assert abs(fit.remaining_c - 10.0 * np.exp(-59.9 / 25.0)) < 0.3


def test_fit_rule_stops_earlier_than_the_trend_within_its_tolerance_of_the_final_value(step: list[Telemetry]) -> None:
    rule = Equilibrium(rate_c_per_min=0.2, window_s=120, channels=CHANNELS)
    fit_at = first_reached(FitWatch(rule), step)
    trend_at = first_reached(EquilibriumWatch(rule), step)
    assert fit_at is not None and trend_at is not None
    final = {ch: np.mean([f.named(ch).value for f in step[-300:]]) for ch in CHANNELS}
    tolerance = rule.rate_c_per_min * rule.window_s / 60

    def error(i: int) -> float:
        return max(abs(step[i].named(ch).value - final[ch]) for ch in CHANNELS)

    def seconds(i: int) -> float:
        return (step[i].uptime_ms - step[0].uptime_ms) / 1000

    # the trend rule waits for a window whose slope is flat; the fit stops once the curve says the rest is
    # within the drift the trend rule accepts over one window
    assert seconds(fit_at) < seconds(trend_at) - 30
    assert error(fit_at) <= tolerance + 0.25  # one thermocouple step of noise
    assert seconds(fit_at) > 150  # the drive is minutes behind the air: the fit does not stop on the air alone


def test_baseline_from_the_equilibrium_tail_equals_one_recorded_after_it(step: list[Telemetry]) -> None:
    rule = Equilibrium(rate_c_per_min=0.5, window_s=60, channels=CHANNELS)
    watch = EquilibriumWatch(rule)
    at = first_reached(watch, step)
    assert at is not None
    tail = watch.tail_mean("drive_ctrl", 30)
    after = [f.named("drive_ctrl").value for f in step[at + 1 :] if f.uptime_ms - step[at].uptime_ms <= 30_000]
    assert tail is not None and len(after) >= 290
    # settled: under 0.5 °C/min, the two 30 s means are a quarter of a degree apart at most
    assert abs(tail - float(np.mean(after))) <= 0.25 + 0.5 * 30 / 60
    assert tail_mean(watch.samples, "drive_ctrl", 120) is None  # the watch holds one window: no longer tail


def transition(driven: bool) -> tuple[float, float, float, list[Telemetry]]:
    """single_gpu_idle to equilibrium, then dual_gpu_load (driven or waited out) to equilibrium by the fit
    rule on the stepped rig: the rig seconds from the change to the equilibrium, the drive controller's
    level the rule stopped at (its last 30 s), its level 600 s later, and every frame."""
    rule = Equilibrium(rate_c_per_min=0.2, window_s=60, channels=CHANNELS)
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        frames: list[Telemetry] = []

        def second() -> list[Telemetry]:
            return step_second(sim, link, frames)

        idle, load = load_profile("single_gpu_idle"), load_profile("dual_gpu_load")
        before = settle(sim, link, frames, rule, idle.set_args(), limit=40_000)
        changed = len(frames)
        drive = drive_for(
            level_of({}, idle, idle.set_args(), before), level_of({}, load, load.set_args(), 0.0), {**load.set_args()}
        )
        assert drive is not None and drive.warms and drive.push["air"] > load.set_args()["air"]
        if driven:
            link.set(**drive.push)
            while not drive.done(frames[-1].named("drive_ctrl").value):
                second()
        judged = settle(sim, link, frames, rule, load.set_args(), limit=40_000)
        seconds = (frames[-1].uptime_ms - frames[changed].uptime_ms) / 1000
        for _ in range(600):
            second()
        final = float(np.mean([f.named("drive_ctrl").value for f in frames[-1200:]]))
        return seconds, judged, final, frames


def test_a_driven_change_of_condition_settles_sooner_at_the_same_level() -> None:
    passive_s, passive_at, final, passive_frames = transition(driven=False)
    driven_s, driven_at, driven_final, driven_frames = transition(driven=True)
    assert not any(f.faults for f in passive_frames + driven_frames)  # the firmware's safety never stepped in
    assert abs(driven_final - final) <= 0.25  # the same condition in the end: the same level
    # the air 3 °C above its target while the drive catches up: the drive's lag shortened by a tenth or more
    # (with make fit's exhaust-tied-held profiles 340 against 394 rig s; a minute or more with those before)
    assert driven_s < 0.9 * passive_s
    tolerance = 0.2 * 60 / 60
    for judged in (passive_at, driven_at):  # both within the rule's tolerance and a thermocouple step
        assert abs(judged - final) <= tolerance + 0.25


def test_a_transition_pushes_the_drive_toward_its_new_level_from_either_side() -> None:
    idle, load = load_profile("single_gpu_idle"), load_profile("dual_gpu_load")
    step = load.air_c - idle.air_c  # type: ignore[operator]
    was_idle = level_of({"slot": "top"}, idle, idle.set_args(), 40.0)
    was_load = level_of({"slot": "top"}, load, load.set_args(), 60.0)
    warm = drive_for(was_idle, level_of({"slot": "top"}, load, load.set_args(), 40.5), load.set_args())
    assert warm is not None and warm.warms and warm.until_c == 40.0 + step
    assert warm.push["air"] == round((load.air_c + 3) * 100) and warm.push["fan1"] == load.set_args()["fan1"]
    # hotter, but a skipped cool-down left the drive above its new level: the slot fan cools it, the heater
    # and the chassis fan on the new profile
    hot = drive_for(was_idle, level_of({"slot": "top"}, load, load.set_args(), 70.0), load.set_args())
    assert hot is not None and not hot.warms and hot.push == {**load.set_args(), "fan1": 1000}
    cool = drive_for(was_load, level_of({"slot": "top"}, idle, idle.set_args(), 61.0), idle.set_args())
    assert cool is not None and not cool.warms and cool.until_c == 60.0 - step
    assert cool.push == {**idle.set_args(), "fan0": 1000, "fan1": 1000}
    assert drive_for(was_load, level_of({"slot": "top"}, idle, idle.set_args(), 30.0), idle.set_args()) is None
    elsewhere = level_of({"slot": "bottom"}, load, load.set_args(), 40.0)
    assert drive_for(was_idle, elsewhere, load.set_args()) is None  # another set-up: waited out
    # away from the GPUs the slot's air takes its share of the step (slots.toml's air_coupling, upright 0.2-0.3)
    upright = drive_for(
        level_of({"slot": "upright"}, load, load.set_args(), 40.0),
        level_of({"slot": "upright"}, idle, idle.set_args(), 40.5),
        idle.set_args(),
    )
    coupling = load_slot("upright").air_coupling
    assert 0 < coupling < 0.5 and upright is not None and upright.until_c == pytest.approx(40.0 - coupling * step)


def upright_cooler(until: float | None = None) -> tuple[Drive, Push, float, float, float, list[Telemetry]]:
    """The demo's case: upright, dual_gpu_load settled, then single_gpu_load driven (both fans full) on the
    stepped rig, to the predicted level (or `until`), the push given up when it stalls; then the profile
    and the fit rule. The drive, the push, the push's rig seconds, the level the rule stopped at (its last
    30 s), the level 900 s later, every frame from the push on."""
    rule = Equilibrium(rate_c_per_min=0.2, window_s=60, channels=CHANNELS)
    load, single = load_profile("dual_gpu_load"), load_profile("single_gpu_load")
    at = {"slot": "upright"}
    with SimulatedRig(SimConfig(slot="upright", pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        frames: list[Telemetry] = []

        def second() -> list[Telemetry]:
            return step_second(sim, link, frames)

        def ctrl() -> float:
            return frames[-1].named("drive_ctrl").value

        def air() -> float:
            return frames[-1].named("chassis_air").value

        settle(sim, link, frames, rule, load.set_args())
        for _ in range(600):
            second()
        before = settle(sim, link, frames, rule, load.set_args())
        drive = drive_for(
            level_of(at, load, load.set_args(), before),
            level_of(at, single, single.set_args(), ctrl() + 0.5),
            single.set_args(),
        )
        assert drive is not None and not drive.warms
        if until is not None:
            drive = Drive(drive.push, until, warms=False)
        push = Push(drive.until_c, warms=False, air_c=drive.air_c)
        link.set(**drive.push)
        started = len(frames) - 1
        while not drive.done(ctrl()) and not push.stalled(frames[-1].uptime_ms / 1000, ctrl(), air()):
            assert frames[-1].uptime_ms - frames[started].uptime_ms < 1_200_000  # the demo's timeout
            second()
        pushed_s = (frames[-1].uptime_ms - frames[started].uptime_ms) / 1000
        judged = settle(sim, link, frames, rule, single.set_args())
        for _ in range(900):
            second()
        final = float(np.mean([f.named("drive_ctrl").value for f in frames[-3000:]]))
        return drive, push, pushed_s, judged, final, frames[started:]


def test_a_driven_cooler_change_reaches_the_level_the_slots_share_of_the_step_predicts() -> None:
    drive, _, _, judged, final, frames = upright_cooler()
    assert not any(f.faults for f in frames)
    reached = [f for f in frames if drive.done(f.named("drive_ctrl").value)]
    assert reached  # fans full, it got there (the full step, 11.2 °C, it never would: the next test)
    tolerance = 0.2 * 60 / 60
    assert abs(final - drive.until_c) <= tolerance + 0.25  # the prediction is the level it settles at
    assert abs(judged - final) <= tolerance + 0.25


def test_a_push_that_no_longer_approaches_its_level_gives_up_and_the_profile_takes_over() -> None:
    # the level as predicted before the slot's coupling: the whole step in the air target, out of reach
    load, single = load_profile("dual_gpu_load"), load_profile("single_gpu_load")
    _, _, _, _, final_then, _ = upright_cooler()
    unreachable = final_then - 0.728 * (load.air_c - single.air_c)  # type: ignore[operator]
    drive, push, pushed_s, judged, final, frames = upright_cooler(until=unreachable)
    assert not any(f.faults for f in frames)
    assert not drive.done(min(f.named("drive_ctrl").value for f in frames))  # never got there
    assert pushed_s < 1200 and push.started_s is not None  # gave up before the demo's timeout ended it
    tolerance = 0.2 * 60 / 60
    assert abs(final - final_then) <= 0.25 and abs(judged - final) <= tolerance + 0.25  # the same level


def test_a_push_from_above_is_not_given_up_while_the_air_still_rises_under_it() -> None:
    """The Puget sample's case: a workload's heat, its cool-down skipped (the next run in another profile),
    then a hotter profile driven from above (the slot fan full under the new air target). The drive cools
    while the air rises under it; a fit of the drive's course then says where it would settle in the air of
    now, short of the level, and the push was given up after 30 s, leaving the drive to the profile's own
    fans for minutes. Judged once the air has arrived, the push reaches the level, and the level is the
    one the drive settles at."""
    rule = Equilibrium(rate_c_per_min=0.2, window_s=60, channels=CHANNELS)
    idle, load = load_profile("single_gpu_idle"), load_profile("single_gpu_load")
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        frames: list[Telemetry] = []

        baseline = settle(sim, link, frames, rule, idle.set_args())
        idle_w = sim.plant.drive_power_w
        sim.plant.drive_power_w = 4.0  # a workload's heat, no cool-down after it
        for _ in range(300):
            step_second(sim, link, frames)
        sim.plant.drive_power_w = idle_w
        ctrl = frames[-1].named("drive_ctrl").value
        drive = drive_for(
            level_of({}, idle, idle.set_args(), baseline), level_of({}, load, load.set_args(), ctrl), load.set_args()
        )
        assert drive is not None and not drive.warms and drive.air_c == load.air_c  # hotter, from above
        push, blind = Push(drive.until_c, False, drive.air_c), Push(drive.until_c, False)
        blind_s = None  # when a push judged without the air gives up
        link.set(**drive.push)
        started = len(frames) - 1
        while not drive.done(ctrl := frames[-1].named("drive_ctrl").value):
            t = frames[-1].uptime_ms / 1000
            if blind_s is None and blind.stalled(t, ctrl):
                blind_s = t - frames[started].uptime_ms / 1000
            assert not push.stalled(t, ctrl, frames[-1].named("chassis_air").value)
            assert t - frames[started].uptime_ms / 1000 < 600
            step_second(sim, link, frames)
        assert blind_s is not None and blind_s < 40  # judged on the drive alone, given up with the air still rising
        judged = settle(sim, link, frames, rule, load.set_args())
        for _ in range(600):
            step_second(sim, link, frames)
        final = float(np.mean([f.named("drive_ctrl").value for f in frames[-3000:]]))
        assert not any(f.faults for f in frames)
        tolerance = rule.rate_c_per_min * rule.window_s / 60
        assert abs(final - drive.until_c) <= tolerance + 0.25  # the level reached is the one it settles at
        assert abs(judged - final) <= tolerance + 0.25


def cooldown_campaign(tmp_path: Path) -> Campaign:
    """The test campaign with the Puget example's equilibrium (0.2 °C/min over 60 s, three channels)."""
    path = campaign_file(tmp_path, "cooldown")
    text = path.read_text().replace("rate_c_per_min = 1.0\nwindow_s = 20", "rate_c_per_min = 0.2\nwindow_s = 60")
    three = 'channels = ["chassis_air", "drive_ctrl", "drive_nand"]'
    path.write_text(text.replace('channels = ["chassis_air", "drive_ctrl"]', three))
    return load_campaign(path)


def test_an_active_cool_down_keeps_the_slot_fan_full_until_the_drive_is_within_the_equilibrium_tolerance(
    tmp_path: Path,
) -> None:
    """Past the margin the recovery figure is read at: the fans set back with the drive's board at its
    level, so the next equilibrium's rule stops at the level, not on a warm tail."""
    campaign = cooldown_campaign(tmp_path)
    rule = campaign.equilibrium
    tolerance = rule.rate_c_per_min * rule.window_s / 60
    args = load_profile("single_gpu_idle").set_args()
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        frames: list[Telemetry] = []

        def second() -> list[Telemetry]:
            return step_second(sim, link, frames)

        settle(sim, link, frames, rule, args)
        for _ in range(600):
            second()
        baseline = settle(sim, link, frames, rule, args)
        idle_w = sim.plant.drive_power_w
        sim.plant.drive_power_w = 4.0  # a workload's heat
        for _ in range(240):
            second()
        sim.plant.drive_power_w = idle_w
        phases = Phases(campaign, Testbed("sim", link, link.info), ProgressDisplay(Progress(), None), threading.Event())
        out, cooled = sim.run_alongside(link, lambda: phases._cooldown(baseline, args))
        assert out["back_to_baseline"] and out["mode"] == "active"
        assert 0 < out["after_s"] < out["fans_full_s"]  # the recovery figure at the margin; the fans on past it
        assert out["fans_full_until_c"] == round(baseline + tolerance, 2)
        assert cooled[-1].named("drive_ctrl").value <= baseline + tolerance
        judged = settle(sim, link, frames, rule, args)
        for _ in range(900):
            second()
        final = float(np.mean([f.named("drive_ctrl").value for f in frames[-3000:]]))
        assert not any(f.faults for f in frames)
        assert abs(judged - final) <= tolerance + 0.25 and abs(final - baseline) <= 0.25


def cool_and_settle(tmp_path: Path, lowered: bool) -> tuple[float, float, float, dict, list[Telemetry]]:
    """dual_gpu_load settled on the stepped rig, a workload's heat (3 W for 300 s, the drive near its
    throttle), then the active cool-down before a run in the same condition (its air target lowered or
    not) and the fit rule: the rig seconds from the workload's end to the equilibrium, the level the rule
    stopped at, the level 600 s later, the cool-down's record and every frame."""
    tmp_path.mkdir()
    campaign = cooldown_campaign(tmp_path)
    rule = campaign.equilibrium
    args = load_profile("dual_gpu_load").set_args()
    with SimulatedRig(SimConfig(pacing=Pacing.stepped())) as sim, RigLink(sim.port) as link:
        link.hello()
        frames: list[Telemetry] = []
        baseline = settle(sim, link, frames, rule, args)
        idle_w = sim.plant.drive_power_w
        sim.plant.drive_power_w = 3.0  # a workload's heat
        for _ in range(300):
            step_second(sim, link, frames)
        sim.plant.drive_power_w = idle_w
        ended = frames[-1].uptime_ms
        phases = Phases(campaign, Testbed("sim", link, link.info), ProgressDisplay(Progress(), None), threading.Event())
        with pytest.MonkeyPatch.context() as mp:
            if not lowered:
                mp.setattr(phases_module, "AIR_OVERSHOOT_C", 0.0)
            out, cooled = sim.run_alongside(link, lambda: phases._cooldown(baseline, args))
        frames += cooled
        judged = settle(sim, link, frames, rule, args)
        seconds = (frames[-1].uptime_ms - ended) / 1000
        for _ in range(600):
            step_second(sim, link, frames)
        final = float(np.mean([f.named("drive_ctrl").value for f in frames[-3000:]]))
        assert not any(f.faults for f in frames)
        return seconds, judged, final, out, cooled


def test_an_active_cool_down_lowers_the_air_target_and_restores_it_before_the_drive_is_back(tmp_path: Path) -> None:
    """The air target 3 °C below the profile's while the drive is more than 1 °C above its margin, then
    the profile's again: the drive gives its heat to cooler air, and the air is back by the time the drive
    is, so the next equilibrium stops at the same level, sooner (stepped rig: 189 -> 126 rig s)."""
    target = load_profile("dual_gpu_load").air_c
    assert target is not None
    held_s, held_at, held_final, held, _ = cool_and_settle(tmp_path / "held", lowered=False)
    low_s, low_at, low_final, low, cooled = cool_and_settle(tmp_path / "lowered", lowered=True)
    assert low["air_lowered_c"] == 3.0 and held["air_lowered_c"] == 0.0
    air = [f.named("chassis_air").value for f in cooled]
    assert min(air) < target - 2.0  # the air followed the lowered target down
    assert low_s < 0.85 * held_s  # to the next equilibrium at least 15 % sooner
    tolerance = 0.2 * 60 / 60
    for judged, final in ((held_at, held_final), (low_at, low_final)):  # at the level, within the rule's tolerance
        assert abs(judged - final) <= tolerance + 0.25
    assert abs(low_final - held_final) <= 0.1  # the same condition: the same level


def test_the_plan_leaves_out_the_cool_down_before_a_change_of_condition(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, "skip", 'order = "blocks"', 'before_change = "skip"', slots='["top", "upright"]')
    plan = make_plan(load_campaign(path), 3)
    skipped = [r.index for r in plan.runs if plan.skips_cooldown(r)]
    changes = [
        a.index
        for a, b in zip(plan.runs, plan.runs[1:], strict=False)
        if (a.physical, a.profile) != (b.physical, b.profile)
    ]
    assert skipped == changes and len(skipped) == 3  # 4 blocks: 3 changes; the last run cools down
    assert all(plan.phases(plan.runs[i - 1]).cooldown_s == 0.0 for i in skipped)
    assert all(plan.phases(r).cooldown_s == 300.0 for r in plan.runs if r.index not in skipped)
    kept = make_plan(load_campaign(campaign_file(tmp_path, "kept", 'order = "blocks"', slots='["top", "upright"]')), 3)
    assert not any(kept.skips_cooldown(r) for r in kept.runs)


def test_the_cool_down_is_kept_before_a_condition_nearly_the_same(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, "near", 'order = "least-change"', 'before_change = "skip"')
    load = load_profile("single_gpu_load")
    near = f"air_c = {(load.air_c or 0.0) + 0.5}\nfan0_pct = {load.fan0_pct}\nfan1_pct = {load.fan1_pct}\n"
    text = path.read_text().replace('"single_gpu_load", "dual_gpu_load"', '"single_gpu_load", "near", "dual_gpu_load"')
    path.write_text(text + f"\n[profiles.near]\n{near}heater_limit_pct = {load.heater_limit_pct}\n")
    c = load_campaign(path)
    for seed in (1, 2):
        plan = make_plan(c, seed)
        lasts = [a for a, b in zip(plan.runs, plan.runs[1:], strict=False) if a.profile != b.profile]
        assert len(lasts) == 2  # three blocks, in heat order: single_gpu_load and near side by side
        for a in lasts:
            b = plan.runs[a.index]
            close = {a.profile, b.profile} == {"single_gpu_load", "near"}
            assert nearly_same(c, a, b) == close
            assert plan.skips_cooldown(a) == (not close)  # kept before (or after) the condition 0.5 °C away
            assert (plan.phases(a).cooldown_s == 0.0) == (not close)
    top = next(r for r in plan.runs if r.profile == "single_gpu_load")
    assert nearly_same(c, top, replace(top, profile="near"))
    assert not nearly_same(c, top, replace(top, profile="near", physical={"slot": "bottom"}))  # another set-up
    assert not nearly_same(c, top, replace(top, profile="near", fan1_pct=50.0))  # another slot fan


def test_a_run_says_what_its_eta_is_estimated_from(tmp_path: Path, influx_env: dict[str, str]) -> None:
    path = campaign_file(tmp_path, "eta")
    path.write_text(path.read_text().replace('port = "sim"', 'port = "/dev/thermrig-no-such-port"'))
    out = tmp_path / "campaigns" / "eta"
    none = thermrig(*run_args(path, out), env=influx_env)
    assert "ETA fixed guesses (300 s equilibrium, 300 s cool-down)" in " ".join(none.stdout.split()), (
        none.stdout + none.stderr
    )
    history = tmp_path / "history" / "past" / "past-001"
    history.mkdir(parents=True)
    (history / "manifest.json").write_text(json.dumps(manifest(1, "single_gpu_load", "top", 400.0, 200.0)))
    again = thermrig(*run_args(path, tmp_path / "again"), "--history", str(tmp_path / "history"), env=influx_env)
    assert "ETA recorded runs of rig rig1 (1 under" in " ".join(again.stdout.split()), again.stdout


CAMPAIGN = """
[campaign]
name = "{name}"
seed = 11
repeats = 2
baseline_s = 5
{campaign}

[rig]
port = "sim"
speed = 10

[drive]
target = "{target}"
size = "32m"
model = "file"

[equilibrium]
rate_c_per_min = 1.0
window_s = 20
timeout_s = 900
channels = ["chassis_air", "drive_ctrl"]
{equilibrium}

[cooldown]
margin_c = 1.0
timeout_s = 300
{cooldown}

[factors]
slot = {slots}
profile = ["single_gpu_load", "dual_gpu_load"]

[[workload]]
name = "sw"
kind = "seq_write"
runtime_s = 2

[[workload]]
name = "sr"
kind = "seq_read"
runtime_s = 2
"""


def campaign_file(
    folder: Path, name: str, campaign: str = "", cooldown: str = "", slots: str = '["top"]', equilibrium: str = ""
) -> Path:
    path = folder / f"{name}.toml"
    target = file_drive(folder, "32m")["target"]
    text = CAMPAIGN.format(
        name=name, campaign=campaign, cooldown=cooldown, slots=slots, target=target, equilibrium=equilibrium
    )
    path.write_text(text)
    return path


def test_blocks_keep_each_chassis_condition_together_in_random_order(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, "blocks", 'order = "blocks"', slots='["top", "upright"]')
    c = load_campaign(path)
    plans = [make_plan(c, seed) for seed in (1, 2, 3, 4)]
    for plan in plans:
        assert len(plan.runs) == 2 * 2 * 2 * 2
        assert plan.physical_changes() == 1
        assert plan.condition_changes() == 3  # 2 slots x 2 profiles: one run of blocks each
        assert plan.design() == {
            "seed": plan.seed,
            "randomize": True,
            "order": "blocks",
            "grouped_by": ["slot"],
            "blocks": ["profile"],
        }
    orders = {tuple((r.physical["slot"], r.profile, r.workload.name, r.repeat) for r in p.runs) for p in plans}
    assert len(orders) > 1  # the blocks and the runs in them are drawn from the seed
    assert make_plan(c, 1).runs == plans[0].runs
    random_plan = make_plan(load_campaign(campaign_file(tmp_path, "random")), 1)
    assert random_plan.condition_changes() > 3


def test_least_change_orders_the_blocks_by_air_target_and_reverses_at_each_hardware_change(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, "least", 'order = "least-change"', slots='["top", "upright", "bottom"]')
    four = '"single_gpu_idle", "dual_gpu_load", "dual_gpu_idle", "single_gpu_load"'  # not in heat order
    path.write_text(path.read_text().replace('"single_gpu_load", "dual_gpu_load"', four))
    c = load_campaign(path)
    air = {name: p.air_c for name, p in c.profiles.items()}
    plans = [make_plan(c, seed) for seed in range(1, 9)]
    for plan in plans:
        assert (
            len(plan.runs) == 3 * 4 * 2 * 2
            and len({(r.physical["slot"], r.profile, r.workload.name, r.repeat) for r in plan.runs}) == 48
        )
        assert plan.physical_changes() == 2 and plan.condition_changes() == 3 * 4 - 1
        ways = []
        for slot in dict.fromkeys(r.physical["slot"] for r in plan.runs):
            blocks = list(dict.fromkeys(r.profile for r in plan.runs if r.physical["slot"] == slot))
            temps = [air[b] for b in blocks]
            assert temps in (sorted(temps), sorted(temps, reverse=True)), (slot, blocks)
            ways.append(temps == sorted(temps))
        assert ways == [plan.coolest_first, not plan.coolest_first, plan.coolest_first]  # reversed at each change
        for a, b in zip(plan.runs, plan.runs[1:], strict=False):
            if a.physical != b.physical:
                assert a.profile == b.profile  # a hardware change keeps the chassis condition
        first = "coolest" if plan.coolest_first else "hottest"
        assert plan.design()["order"] == "least-change" and plan.design()["blocks"] == ["profile"]
        assert plan.design()["block_order"].startswith(f"by chassis air target, {first} first")
    assert {p.coolest_first for p in plans} == {True, False}  # the first way is drawn from the seed
    orders = {tuple((r.physical["slot"], r.profile, r.workload.name, r.repeat) for r in p.runs) for p in plans}
    assert len(orders) > 2  # so are the configurations' order and the runs within each block
    assert make_plan(c, 1).runs == plans[0].runs


def manifest(run: int, profile: str, slot: str, eq: float, cd: float, kind: str = "seq_write") -> dict:
    return {
        "campaign": "past",
        "index": run,
        "start_utc": f"2026-11-01T10:{run:02d}:00+00:00",
        "status": "ok",
        "rig": {"name": "rig1"},
        "factors": {"slot": slot, "profile": profile, "fan1_pct": None},
        "workload": {"kind": kind, "runtime_s": 2},
        "equilibrium": {"after_s": eq, "rule": "fit", "transition": "passive"},
        "cooldown": {"after_s": cd, "mode": "active"},
        "rig_time_s": {"equilibrium": eq, "baseline": 0.0, "workload": 2.5, "cooldown": cd},
    }


def test_the_planner_estimates_from_recorded_runs_and_says_when_it_has_none(
    tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    path = campaign_file(tmp_path, "planned", 'order = "blocks"')
    history = tmp_path / "runs"
    none = thermrig("plan", str(path), "--history", str(history), "--no-model", env=isolated_env)
    assert none.returncode == 0, none.stderr
    said = " ".join(none.stdout.split())  # rich folds the line at the terminal's width
    assert "estimates from fixed guesses (300 s equilibrium, 300 s cool-down): equilibrium of 8/8 runs" in said
    past = [  # a campaign on this rig: single load then dual load, same slot
        manifest(1, "single_gpu_load", "top", 400.0, 200.0),
        manifest(2, "single_gpu_load", "top", 40.0, 180.0, "seq_read"),
        manifest(3, "dual_gpu_load", "top", 300.0, 260.0),
        manifest(4, "dual_gpu_load", "top", 60.0, 240.0, "seq_read"),
    ]
    for m in past:
        folder = history / "past" / f"past-{m['index']:03d}"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps(m))
    other_rig = {**manifest(5, "dual_gpu_load", "top", 9999.0, 9999.0), "rig": {"name": "rig2"}}
    (history / "past" / "other").mkdir()
    (history / "past" / "other" / "manifest.json").write_text(json.dumps(other_rig))
    h = History.read(history, "rig1")
    assert len(h.runs) == 4
    assert [r.before for r in h.runs] == ["-", "single_gpu_load", "single_gpu_load", "dual_gpu_load"]
    plan = make_plan(load_campaign(path), history=h)
    for run in plan.runs:
        e = plan.phases(run)
        assert e.from_history and e.baseline_s == 0.0 and e.workload_s == 2
        prev = plan.runs[run.index - 2] if run.index > 1 else None
        if prev is None:
            # from the start: single's recorded; dual's never was: the median of the changed conditions
            assert e.equilibrium_s == (400.0 if run.profile == "single_gpu_load" else 350.0)
        elif prev.profile == run.profile:
            assert e.equilibrium_s == (40.0 if run.profile == "single_gpu_load" else 60.0)
        else:
            assert e.equilibrium_s == (300.0 if run.profile == "dual_gpu_load" else 350.0)
        expected_cd = {("single_gpu_load", "sw"): 200, ("single_gpu_load", "sr"): 180, ("dual_gpu_load", "sw"): 260}
        assert e.cooldown_s == expected_cd.get((run.profile, run.workload.name), 240)
    out = thermrig("plan", str(path), "--history", str(history), env=isolated_env)
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.split())
    assert "recorded runs of rig rig1 (4 under" in said and "equilibrium of 8/8 runs, cool-down of 8/8" in said
    assert f"estimated {hms(plan.total_s())}" in said


def test_a_plan_whose_run_draws_its_own_order_says_what_other_orders_take(
    tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    """No seed in the file: the run draws its order, so the plan gives the estimates of 50 other orders
    (seeds 1-50) beside its own; with a seed (the file's or --seed) the order is the run's and it does not."""
    seeded = campaign_file(tmp_path, "drawn", 'order = "blocks"', slots='["top", "upright"]')
    path = tmp_path / "unseeded.toml"
    path.write_text(seeded.read_text().replace("seed = 11\n", ""))
    history = tmp_path / "runs"
    for m in [
        manifest(1, "single_gpu_load", "top", 400.0, 200.0),
        manifest(2, "dual_gpu_load", "top", 300.0, 260.0),
        manifest(3, "single_gpu_load", "top", 900.0, 180.0),
    ]:
        folder = history / "past" / f"past-{m['index']:03d}"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps(m))
    c, h = load_campaign(path), History.read(history, "rig1")
    totals = sorted(make_plan(c, seed, history=h).total_s() for seed in range(1, 51))
    assert totals[0] < totals[-1]  # the order matters here: a change of profile costs more one way
    out = thermrig("plan", str(path), "--history", str(history), "--no-model", env=isolated_env)
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.split())
    assert "`thermrig run` draws its own (no seed in the file): 50 other orders (seeds 1-50)" in said
    assert f"estimated {hms(totals[0])} to {hms(totals[-1])}, median {hms((totals[24] + totals[25]) / 2)}" in said
    for fixed in (
        thermrig("plan", str(seeded), "--history", str(history), "--no-model", env=isolated_env),
        thermrig("plan", str(path), "--history", str(history), "--seed", "3", "--no-model", env=isolated_env),
    ):
        assert fixed.returncode == 0 and "other orders" not in fixed.stdout, fixed.stdout + fixed.stderr


def test_a_campaign_with_the_shorter_waits_runs_and_records_them(tmp_path: Path, influx_env: dict[str, str]) -> None:
    path = campaign_file(
        tmp_path, "shorter", 'order = "blocks"', 'before_change = "skip"', equilibrium='transition = "driven"'
    )
    out = tmp_path / "out"
    result = thermrig(*run_args(path, out), env=influx_env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    ms = sorted(manifests(out).values(), key=lambda m: m["index"])
    assert len(ms) == 8 and all(m["status"] == "ok" for m in ms)
    for m in ms:  # the defaults (the fit, the active cool-down) and driven transitions
        assert m["design"]["order"] == "blocks"
        assert set(m["rig_time_s"]) == {"equilibrium", "baseline", "workload", "cooldown"}
        assert m["rig_time_s"]["baseline"] == 0.0  # the equilibrium's tail: 5 s of a 20 s window
        assert m["equilibrium"]["rule"] == "fit" and m["equilibrium"]["transition"] == "driven"
        assert m["cooldown"]["mode"] == "active"
        assert m["cooldown"]["back_to_baseline"] == (m["index"] != 4)  # run 4: the next is another condition
        assert m["cooldown"].get("skipped", False) == (m["index"] == 4) and m["rig_time_s"]["workload"] >= 2
        assert ("driven" in m["equilibrium"]) == (m["index"] == 5)  # the one change of chassis condition
    profiles = [m["factors"]["profile"] for m in ms]
    assert profiles[:4] == [profiles[0]] * 4 and profiles[4:] == [profiles[4]] * 4
    driven = ms[4]["equilibrium"]["driven"]
    assert driven["reached"] and driven["warms"] == (profiles[4] == "dual_gpu_load")
    assert ms[4]["equilibrium"]["after_s"] >= driven["after_s"] > 0  # its rig time counted in the equilibrium's
    airs = {name: load_profile(name).air_c or 0.0 for name in ("single_gpu_load", "dual_gpu_load")}
    step = airs[profiles[4]] - airs[profiles[3]]  # the top slot: the whole step in the air target
    assert driven["until_drive_ctrl_c"] == round(ms[3]["baseline_drive_ctrl_c"] + step, 2)
    # the planner learns from them: the same campaign is now estimated from its own rig's history
    plan = thermrig("plan", str(path), "--history", str(out), env=influx_env)
    said = " ".join(plan.stdout.split())
    assert "(8 under" in said and "equilibrium of 8/8 runs, cool-down of 8/8" in said, plan.stdout
