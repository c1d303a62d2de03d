"""Calibration: the reduced subset of `make calibrate` through the whole pipeline (simulated rig, virtual
drive, real fio, a private InfluxDB, the table read back), and the fit's building blocks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from thermrig.analysis.published import PUGET
from thermrig.analysis.throttle_table import ThrottleRow
from thermrig.calibration.crossval import crossval, summarise
from thermrig.calibration.fit import cost, evaluate, fit
from thermrig.calibration.parameters import (
    FIT_MODEL,
    MODELS,
    Fitted,
    Fixed,
    Model,
    all_bounds,
    build,
    current,
    prior,
    read,
    start_point,
)
from thermrig.calibration.pipeline import QUICK_CELLS, host_disturbed
from thermrig.hardware.profiles import load_chassis
from thermrig.sim import plant_replay

# Earlier hardware profiles, before the exhaust models: the objective has a narrow minimum in the throttle
# gain at their 0.035 W/K/s, a plateau from about 0.08 to 0.3 beside it.
NARROW_MINIMUM_PROFILES = {
    "tmt1_c": 71.1,
    "tmt2_c": 95.0,
    "hysteresis_c": 2.21,
    "throttle_gain_w_per_k_s": 0.035,
    "ctrl_capacity_j_per_k": 0.454,
    "board_capacity_j_per_k": 6.54,
    "g_ctrl_board_w_per_k": 0.426,
    "ctrl_power_fraction": 0.565,
    "tmt2_w": 2.73,
    "idle_power_w": 1.298,
    "top.air_coupling": 0.944,
    "top.v_chassis_fan": 0.837,
    "bottom.air_coupling": 0.810,
    "bottom.v_chassis_fan": 0.779,
    "upright.air_coupling": 0.346,
    "upright.v_chassis_fan": 0.687,
    "underside.air_coupling": 0.966,
    "underside.v_chassis_fan": 0.451,
    "single_gpu_idle.air_c": 27.2,
    "dual_gpu_idle.air_c": 35.4,
    "single_gpu_load.air_c": 36.6,
    "dual_gpu_load.air_c": 48.7,
    **{f"{slot}.v_heater": 0.0 for slot in ("top", "bottom", "upright", "underside")},  # no exhaust term then
}


@pytest.mark.timeout(900)
@pytest.mark.timed_world
def test_two_puget_cells_through_the_pipeline_match_the_tables_and_the_model(tmp_path: Path) -> None:
    # The two cells' campaigns side by side (--jobs 2), as `calibrate check --quick` means them to run: each
    # world takes about a sixth of a core (70 s of CPU in 403 s of wall time for both, one after the other)
    out = tmp_path / "calibration"
    proc = subprocess.Popen(
        [sys.executable, "-m", "thermrig.cli", "calibrate", "check", "--quick", "--jobs", "2", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, _ = proc.communicate(timeout=840)
    finally:
        if proc.poll() is None:  # stop it the way Ctrl-C would: campaigns safe, influxd down, nothing left
            os.killpg(proc.pid, signal.SIGTERM)
            proc.communicate(timeout=60)
    r = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, "")
    report = json.loads((out / "report.json").read_text())
    assert not report["failed"], r.stdout + r.stderr
    checks = report["checks"]
    assert len(checks) == len(QUICK_CELLS)
    assert all(c["ok"] for c in checks), r.stdout
    assert r.returncode == 0
    # The virtual drive's smart-log went through the nvme-cli parser into drive_smart at 1 Hz, and it
    # counted its light-throttle transitions.
    for smart in report["drive_smart"].values():
        assert smart["points"] >= 100
        assert smart["max_tmt1_count"] >= 1
    # Each onset is judged from attributed data: the drive's own account moved at it (a fall the host made,
    # fio starved on a busy machine, is passed over and counted apart: docs/analysis.md).
    runs = [run for rs in report["runs"].values() for run in rs]
    assert len(runs) == len(QUICK_CELLS) and all(run["onset_cause"] == "thermal" for run in runs), runs
    # A run the host stalled before its onset is no sample of the model: its campaign ran again, the
    # attempt kept beside it; the runs judged here are the ones no stall moved (both stalled: it fails).
    assert not [run for run in runs if host_disturbed(ThrottleRow(**run))], runs
    for name, aside in report["set_aside"].items():
        assert aside and (out / f"{name}.set-aside").is_dir() and name in r.stdout, r.stdout
    # The pipeline measures what the model predicts: fio's logs through InfluxDB agree with the replay.
    model = {
        (c.slot, c.profile): res
        for c, res in zip(PUGET, evaluate(plant_replay, load_chassis(), current()), strict=True)
    }
    for check in checks:
        slot, profile = (x.strip() for x in check["cell"].split("/"))
        depth, onset = check["measured"].split("% after ")
        predicted = model[(slot, profile)]
        assert predicted.onset_s is not None
        assert float(onset.split()[0]) == pytest.approx(predicted.onset_s, abs=3.0)
        assert float(depth) == pytest.approx(predicted.depth_pct, abs=4.0)


def test_a_run_the_host_stalled_before_its_onset_is_no_sample() -> None:
    row = ThrottleRow("r", "upright", "none", "single_gpu_idle", "seqwrite", "950pro_512", 120, 61.0, 42.0, 1.5e9)
    assert not host_disturbed(row)
    stalled = replace(row, host_lost_s=0.6)  # the stalls before the onset lost 0.6 s of writing
    assert host_disturbed(replace(stalled, host_stalls=(8, 62)))  # a stall at 8 s: the drive heated less
    assert host_disturbed(replace(stalled, host_stalls=(61,)))
    assert not host_disturbed(replace(stalled, host_stalls=(62, 90)))  # after the onset: the onset stands
    assert host_disturbed(replace(stalled, onset_s=None, host_stalls=(30,)))  # no onset: it may have hidden it
    assert not host_disturbed(replace(stalled, onset_s=None))
    # a loaded clean clone's run: fio's seconds 63 and 66 of 75 MB/s at 8 and 10 s, 0.28 s of writing lost,
    # an onset at 62 s: it moves no onset
    assert not host_disturbed(replace(row, host_stalls=(8, 10), host_lost_s=0.28))


def test_writing_the_fitted_values_back_keeps_the_files_and_their_comments(hardware_copy: Path) -> None:
    from thermrig.calibration.profile_writer import fitted_edits, set_values, sm951_edits, write
    from thermrig.hardware.drive_profiles import load_drive_profile

    before = {p.name: p.read_text() for p in hardware_copy.glob("*.toml")}
    write(fitted_edits(current()) + sm951_edits(load_drive_profile("sm951_512")))
    assert {p.name: p.read_text() for p in hardware_copy.glob("*.toml")} == before  # same values: same files
    set_values(hardware_copy / "drives.toml", "sm951_512", {"tmt1_c": "80.5"})
    changed = [
        (a, b)
        for a, b in zip(
            before["drives.toml"].splitlines(), (hardware_copy / "drives.toml").read_text().splitlines(), strict=True
        )
        if a != b
    ]
    assert len(changed) == 1 and changed[0][1].startswith("tmt1_c = 80.5")
    assert load_drive_profile("sm951_512").tmt1_c == 80.5


def test_seeds_000_and_004_hold_on_the_replay() -> None:
    from thermrig.calibration.mixed import mixed_and_consistency_checks
    from thermrig.hardware.drive_profiles import load_drive_profile

    checks = mixed_and_consistency_checks(plant_replay, load_chassis(), load_drive_profile("950pro_512"))
    assert len(checks) == 6
    for check in checks:  # each as the review describes it, with the tolerance in analysis.published
        assert check.ok, check


def _only(*names: str, base: Fitted | None = None) -> Model:
    """A model that frees only `names`, the rest held at base's values (the profiles'): a cheap fit."""
    v = read(current() if base is None else base)
    return Model("test", tuple(Fixed(b.name, v[b.name], "test") for b in all_bounds() if b.name not in names))


def test_leave_one_cell_out_starts_every_fit_from_one_point_that_saw_no_cell() -> None:
    cells = [c for c in PUGET if c.profile == "dual_gpu_load"]  # bottom, top, upright
    model = _only("tmt1_c", "dual_gpu_load.air_c")
    result = crossval(plant_replay, model, cells=cells, held_out=cells[:2], maxfev=12, gain_starts=())
    assert [f.cell for f in result.folds] == cells[:2]
    chassis = load_chassis()
    # One start for every fit, the in-sample one included: the prior, else each bound's middle.
    start = start_point(model, "prior", current())
    assert result.start == "prior" and result.start_point == start
    assert read(start)["tmt1_c"] == 75.0 and read(start)["dual_gpu_load.air_c"] == 45.0
    whole = result.in_sample
    assert whole.start_cost == pytest.approx(cost(evaluate(plant_replay, chassis, start, cells), cells))
    assert whole.cost <= whole.start_cost and 1 < whole.evaluations <= 12
    for fold in result.folds:
        train = [c for c in cells if c != fold.cell]
        assert fold.start_cost == pytest.approx(cost(evaluate(plant_replay, chassis, start, train), train))
        assert fold.in_sample == evaluate(plant_replay, chassis, whole.fitted, [fold.cell])[0]
        assert fold.held_out == evaluate(plant_replay, chassis, fold.fitted, [fold.cell])[0]
        assert fold.fold_cost == pytest.approx(cost(evaluate(plant_replay, chassis, fold.fitted, train), train))
        assert fold.fold_cost <= fold.start_cost
        assert 1 < fold.evaluations <= 12 and not fold.converged  # 12 evaluations: the budget stopped it
        moved = read(fold.fitted)
        assert {k for k, x in read(start).items() if moved[k] != x} <= {"tmt1_c", "dual_gpu_load.air_c"}
    assert summarise(result.folds).unconverged == 2
    # What the held-out cell published never reaches its fold: told another number, the fold is the same
    # (in worker processes, as --jobs runs them).
    lied = [replace(c, onset_s=c.onset_s + 30, depth_pct=c.depth_pct - 30) if c == cells[0] else c for c in cells]
    again = crossval(plant_replay, model, cells=lied, held_out=lied[:1], maxfev=12, gain_starts=(), jobs=2)
    (fold,) = again.folds
    assert fold.fitted == result.folds[0].fitted and fold.held_out == result.folds[0].held_out
    assert again.start_point == start


def test_the_crossval_start_reads_no_calibrated_number_from_the_profiles() -> None:
    # The profiles are the fit on every cell: a start that read them would have seen each held-out cell.
    # Every model's prior and middle starts are the same whatever the profiles hold.
    profiles = current()
    other = build({k: (b.lo + 0.1 * (b.hi - b.lo)) for k, b in ((b.name, b) for b in all_bounds())}, profiles)
    assert read(other) != read(profiles)
    for model in MODELS.values():
        for how in ("prior", "middle"):
            assert read(start_point(model, how, profiles)) == read(start_point(model, how, other)), (model.name, how)
        x = model.start(start_point(model, "middle", profiles))
        assert x == [(b.lo + b.hi) / 2 for b in model.free]
    assert start_point(FIT_MODEL, "profiles", profiles) is profiles  # the old warm start, kept as an option
    sources = prior()
    assert set(sources) == {b.name for b in all_bounds()} and all(p.source for p in sources.values())
    assert all(b.lo <= sources[b.name].value <= b.hi for b in all_bounds())
    with pytest.raises(ValueError, match="one of prior, middle, profiles"):
        start_point(FIT_MODEL, "warm", profiles)


def test_a_fit_that_reaches_its_tolerances_says_it_converged() -> None:
    cells = [c for c in PUGET if c.profile == "dual_gpu_load"][:1]
    model = _only("dual_gpu_load.air_c")
    r = fit(plant_replay, model, start_point(model, "prior", current()), cells, maxfev=200, gain_starts=())
    assert r.converged and r.evaluations < 200 and r.cost < r.start_cost


def test_the_fit_never_returns_worse_than_its_start() -> None:
    # The throttle gain alone on every cell, from those profiles' narrow minimum: Powell's bounded line search
    # never evaluates the point it starts from, and lands on the plateau beside the minimum.
    narrow = build(NARROW_MINIMUM_PROFILES, current())
    model = _only("throttle_gain_w_per_k_s", base=narrow)
    x0 = model.start(narrow)
    chassis = load_chassis()

    def objective(x: np.ndarray) -> float:
        return cost(evaluate(plant_replay, chassis, model.apply([float(a) for a in x], narrow)))

    start = objective(np.array(x0))
    plain = minimize(objective, np.array(x0), method="Powell", bounds=[(b.lo, b.hi) for b in model.free])
    assert plain.fun > start  # the case this test is about: plain Powell ends worse than it began
    result = fit(plant_replay, model, narrow, maxfev=20, gain_starts=())
    assert result.start_cost == pytest.approx(start)
    assert result.cost <= result.start_cost
    assert result.cost == pytest.approx(cost(evaluate(plant_replay, chassis, result.fitted)))


def test_crossval_states_its_refit_effort_and_refuses_starts_it_does_not_have() -> None:
    from typer.testing import CliRunner

    from thermrig.calibration.fit import GAIN_STARTS
    from thermrig.cli.main import app

    runner = CliRunner()
    help_text = runner.invoke(app, ["calibrate", "crossval", "--help"], terminal_width=200).output
    assert "--starts" in help_text and "[default: 1]" in help_text  # one Powell start a fold unless asked
    assert "--start " in help_text and "[default: prior]" in help_text  # out of sample unless asked
    r = runner.invoke(app, ["calibrate", "crossval", "--start", "warm"])
    assert r.exit_code == 2 and "one of prior, middle, profiles" in r.output, r.output
    for starts in (0, 2 + len(GAIN_STARTS)):
        r = runner.invoke(app, ["calibrate", "crossval", "--starts", str(starts)])
        assert r.exit_code == 2, r.output
        assert f"1 to {1 + len(GAIN_STARTS)}" in r.output


def test_the_exhaust_models_profiles_hold_every_puget_cell_in_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/data/exhaust_model_profiles: the profiles fitted with the top and bottom slots in the heater's
    # exhaust, from which `calibrate crossval --model exhaust` measured 10 of 14 held out
    # (docs/design/calibration-models.md)
    from thermrig.calibration.parameters import EXHAUST, IDENTIFIED

    profiles = Path(__file__).resolve().parents[1] / "data" / "exhaust_model_profiles"
    monkeypatch.setenv("THERMRIG_HARDWARE_DIR", str(profiles))
    fitted = current()
    assert fitted.slots["top"].v_heater > 1 and fitted.slots["bottom"].v_heater > 0
    assert fitted.slots["upright"].v_heater == fitted.slots["underside"].v_heater == 0
    results = evaluate(plant_replay, load_chassis(), fitted)
    assert all(all(c.judge(r.onset_s, r.depth_pct)) for c, r in zip(PUGET, results, strict=True))
    assert len(EXHAUST.free) == 19 and len(IDENTIFIED.free) == 18
    assert {b.name for b in EXHAUST.free} - {b.name for b in IDENTIFIED.free} == {"top.v_heater", "bottom.v_heater"}
    assert {b.name for b in IDENTIFIED.free} - {b.name for b in EXHAUST.free} == {"top.v_chassis_fan"}


def test_the_fit_model_ties_the_underside_to_the_upright_and_the_profiles_hold_every_cell() -> None:
    # make fit's model (exhaust-tied-held, 16 free): the exhaust model with the underside's chassis-fan speed
    # the upright's and the throttle gain and TMT2 power held where exhaust-tied's fit left them;
    # hardware/profiles, fitted with it, hold every Puget cell in sample (docs/virtual-drive.md)
    from thermrig.calibration.parameters import EXHAUST, EXHAUST_TIED, EXHAUST_TIED_HELD, FIT_MODEL, MODELS

    assert MODELS["exhaust-tied"] is EXHAUST_TIED and EXHAUST_TIED.fixed == EXHAUST.fixed
    assert len(EXHAUST_TIED.free) == 18
    assert {b.name for b in EXHAUST.free} - {b.name for b in EXHAUST_TIED.free} == {"underside.v_chassis_fan"}
    assert MODELS["exhaust-tied-held"] is EXHAUST_TIED_HELD and EXHAUST_TIED_HELD.ties == EXHAUST_TIED.ties
    held = {b.name for b in EXHAUST_TIED.free} - {b.name for b in EXHAUST_TIED_HELD.free}
    assert len(EXHAUST_TIED_HELD.free) == 16 and held == {"throttle_gain_w_per_k_s", "tmt2_w"}
    assert FIT_MODEL is EXHAUST_TIED_HELD
    fitted = current()
    assert fitted.slots["underside"].v_chassis_fan == fitted.slots["upright"].v_chassis_fan
    values = read(fitted)  # the held model holds them where the tied model's fit left them
    assert all(values[f.name] == pytest.approx(f.value) for f in EXHAUST_TIED_HELD.fixed)
    x = EXHAUST_TIED.start(fitted)
    x[[b.name for b in EXHAUST_TIED.free].index("upright.v_chassis_fan")] = 1.5
    moved = EXHAUST_TIED.apply(x, fitted)
    assert moved.slots["underside"].v_chassis_fan == moved.slots["upright"].v_chassis_fan == 1.5
    results = evaluate(plant_replay, load_chassis(), fitted)
    assert all(all(c.judge(r.onset_s, r.depth_pct)) for c, r in zip(PUGET, results, strict=True))


@pytest.mark.timeout(600)  # 15 fits of 2 evaluations and their predictions: about 20 s of one core
def test_crossval_reports_each_folds_start_end_cost_evaluations_and_convergence(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from thermrig.cli.main import app

    out = tmp_path / "crossval.json"
    r = CliRunner().invoke(
        app, ["calibrate", "crossval", "--maxfev", "2", "--jobs", "2", "--out", str(out)], terminal_width=240
    )
    assert r.exit_code == 0, r.output
    assert "14 of 14 folds stopped by the budget, and the in-sample fit" in r.output
    assert r.output.count("NO (budget)") == 14
    report = json.loads(out.read_text())
    assert report["start"] == "prior" and report["maxfev"] == 2
    assert report["start_values"] == read(start_point(FIT_MODEL, "prior", current()))
    whole = report["in_sample_fit"]
    assert whole["evaluations"] == 2 and not whole["converged"] and whole["cost"] <= whole["start_cost"]
    assert [f["cell"] for f in report["folds"]] == [f"{c.slot} / {c.profile}" for c in PUGET]
    chassis = load_chassis()
    start_results = evaluate(plant_replay, chassis, start_point(FIT_MODEL, "prior", current()))
    for fold, cell in zip(report["folds"], PUGET, strict=True):
        train = [c for c in PUGET if c != cell]
        others = [x for c, x in zip(PUGET, start_results, strict=True) if c != cell]
        assert fold["start_cost"] == pytest.approx(cost(others, train))  # every fold from the same start
        assert fold["fold_cost"] <= fold["start_cost"] and fold["evaluations"] == 2 and not fold["converged"]
        assert set(fold["held_out"]) == {"onset_s", "depth_pct"} and isinstance(fold["held_out_ok"], bool)
    assert report["summary"]["unconverged"] == 14 and report["summary"]["cells"] == 14
