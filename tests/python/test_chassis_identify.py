"""`thermrig rig identify`: a simulated chassis with known, non-default parameters is run through the
step sequence on the real firmware, fitted, and recovered; the profile it writes runs in `thermrig sim`."""

from __future__ import annotations

import dataclasses

import pytest
from waiting import advance_and_read

from thermrig.calibration.chassis_steps import StepError, StepPlan, record_steps
from thermrig.dut.pacing import Pacing
from thermrig.hardware.profiles import ProfileError, chassis_path, chassis_toml, load_chassis
from thermrig.link.rig_link import RigLink
from thermrig.settings import data_dir
from thermrig.sim.chassis_fit import IdentifyError, Second, fit_chassis, fit_held_out, last_step, simulate
from thermrig.sim.simulated_rig import SimConfig, SimulatedRig

TOLERANCE = 0.05  # each identified parameter within 5 % of the truth (make bench: within 1.4 %)


def write_chassis(name: str, chassis: object) -> None:
    path = data_dir() / "chassis" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(chassis_toml(chassis, f"test chassis {name}"))  # type: ignore[arg-type]


def test_a_chassis_file_reads_back_as_written(isolated_env: dict[str, str]) -> None:
    base = load_chassis()
    other = dataclasses.replace(base, air_capacity=2345.0, g_still=4.25, g_fan=7.5)
    write_chassis("mine", other)
    assert load_chassis("mine") == other
    assert chassis_path("mine") == data_dir() / "chassis" / "mine.toml"
    with pytest.raises(ProfileError, match=r"no chassis 'nope'.*known: mine.*rig identify --name nope"):
        load_chassis("nope")
    with pytest.raises(ProfileError, match="chassis name"):
        load_chassis("../etc/passwd")


def test_a_plan_needs_two_fan_levels_and_a_bounded_heater() -> None:
    with pytest.raises(StepError, match="two different fan levels"):
        StepPlan(fan_pct=(50.0, 50.0))
    with pytest.raises(StepError, match="heater duty 120"):
        StepPlan(heater_pct=120.0)
    with pytest.raises(StepError, match="rise 40"):
        StepPlan(rise_c=40.0)
    assert StepPlan().setting_at(0) == (30.0, True) and StepPlan().setting_at(650) == (30.0, False)
    assert StepPlan().setting_at(900) == (100.0, True)


def test_identify_recovers_a_non_default_chassis(isolated_env: dict[str, str]) -> None:
    base = load_chassis()
    truth = dataclasses.replace(
        base, air_capacity=base.air_capacity * 2, g_still=base.g_still * 1.5, g_fan=base.g_fan * 0.5
    )
    write_chassis("truth", truth)
    plan = StepPlan()
    with SimulatedRig(SimConfig(chassis="truth", pacing=Pacing.stepped(), seed=3)) as sim, RigLink(sim.port) as link:
        link.hello()
        samples = sim.run_alongside(link, lambda: record_steps(link, plan))
        assert not advance_and_read(sim, link).heat_enabled  # off at the end, as after any end
    assert samples[-1].t_s >= plan.duration_s - 1
    fit = fit_chassis(samples, base, truth.heater_max_w)
    for name in ("air_capacity", "g_still", "g_fan"):
        got, want = getattr(fit.chassis, name), getattr(truth, name)
        assert got == pytest.approx(want, rel=TOLERANCE), f"{name}: identified {got:.4g}, truth {want:.4g}"
    assert fit.rms_c < 0.3
    # Out of sample: the last cool-down, predicted by the fit on what came before it.
    held = fit_held_out(samples, base, truth.heater_max_w)
    assert held.seconds >= plan.cool_s - 5 and held.fan_pct[0] == plan.fan_pct[-1]
    assert held.fit.seconds == fit.seconds - held.seconds
    assert held.rms_c < 0.3
    # What it writes runs in the simulated rig as the chassis it came from.
    write_chassis("identified", fit.chassis)
    with SimulatedRig(SimConfig(chassis="identified", pacing=Pacing.stepped())) as sim:
        assert sim.plant.chassis.air_capacity == pytest.approx(fit.chassis.air_capacity, rel=1e-5)


def test_a_recording_without_heat_is_refused(isolated_env: dict[str, str]) -> None:
    from thermrig.sim.chassis_fit import Second

    flat = [Second(float(t), 0.0, (30.0, 30.0), 22.0, 22.0) for t in range(300)]
    with pytest.raises(IdentifyError, match="heater never ran"):
        fit_chassis(flat, load_chassis(), 400.0)
    with pytest.raises(IdentifyError, match="at least 120 s"):
        fit_chassis(flat[:50], load_chassis(), 400.0)


def _recording(chassis: object, plan: StepPlan) -> list[Second]:
    """The plan's duties (the heater at its limit while on) and the air the plant gives for them."""
    seconds = []
    for t in range(int(plan.duration_s)):
        fan, heat = plan.setting_at(t)
        seconds.append(Second(float(t), plan.heater_pct if heat else 0.0, (fan, fan), 0.0, 22.0))
    seconds[0] = dataclasses.replace(seconds[0], air_c=22.0)
    air = simulate(chassis, seconds)  # type: ignore[arg-type]
    return [dataclasses.replace(s, air_c=float(a)) for s, a in zip(seconds, air, strict=True)]


def test_the_held_out_step_is_predicted_by_a_fit_that_never_saw_it(isolated_env: dict[str, str]) -> None:
    base = load_chassis()
    truth = dataclasses.replace(base, air_capacity=base.air_capacity * 1.5, g_still=base.g_still * 2.0)
    plan = StepPlan(heater_pct=20.0, heat_s=200.0, cool_s=120.0)
    seconds = _recording(truth, plan)
    k = last_step(seconds)
    assert seconds[k - 1].heater_pct > 0 and all(s.heater_pct == 0 for s in seconds[k:])
    assert len(seconds) - k == plan.cool_s
    held = fit_held_out(seconds, base, truth.heater_max_w)
    assert held.seconds == plan.cool_s and held.start_s == k
    assert held.rms_c < 0.05 and held.fit.rms_c < 0.05  # the plant's own data: predicted as well as fitted
    # The step never reaches its fit: told other air temperatures there, the fit is the same, its error not.
    lied = seconds[:k] + [dataclasses.replace(s, air_c=s.air_c + 1.0) for s in seconds[k:]]
    again = fit_held_out(lied, base, truth.heater_max_w)
    assert again.fit == held.fit
    assert again.rms_c == pytest.approx(1.0, abs=0.1)
    with pytest.raises(IdentifyError, match="held-out step needs"):
        fit_held_out(seconds[: k + 30], base, truth.heater_max_w)
