"""Calibration: the reduced subset of `make calibrate` through the whole pipeline (simulated rig, virtual
drive, real fio, a private InfluxDB, the table read back), and the fit's building blocks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from thermrig.analysis.published import PUGET
from thermrig.calibration.fit import current, evaluate
from thermrig.calibration.pipeline import QUICK_CELLS
from thermrig.hardware.profiles import load_chassis


@pytest.mark.timeout(900)
def test_two_puget_cells_through_the_pipeline_match_the_tables_and_the_model(tmp_path: Path) -> None:
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
    # The pipeline measures what the model predicts: fio's logs through InfluxDB agree with the replay.
    model = {(c.slot, c.profile): res for c, res in zip(PUGET, evaluate(load_chassis(), current()), strict=True)}
    for check in checks:
        slot, profile = (x.strip() for x in check["cell"].split("/"))
        depth, onset = check["measured"].split("% after ")
        predicted = model[(slot, profile)]
        assert predicted.onset_s is not None
        assert float(onset.split()[0]) == pytest.approx(predicted.onset_s, abs=3.0)
        assert float(depth) == pytest.approx(predicted.depth_pct, abs=4.0)


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

    checks = mixed_and_consistency_checks(load_chassis(), load_drive_profile("950pro_512"))
    assert len(checks) == 6
    for check in checks:  # each as the review describes it, with the tolerance in analysis.published
        assert check.ok, check
