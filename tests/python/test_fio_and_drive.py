"""The workload library against the real fio, the runner on file targets, the drive's own telemetry
parsers on real output formats, and the guard that refuses to overwrite data."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from skips import machine_cannot

from thermrig.campaign.model_estimate import HEAT
from thermrig.drive.guard import UnsafeTarget, check_target
from thermrig.drive.hwmon import nvme_hwmon_dir, read_hwmon
from thermrig.drive.smart import SmartError, parse_smart_log
from thermrig.drive.under_test import LocalDrive
from thermrig.fio.runner import FioError, fio_binary, run_fio
from thermrig.fio.workloads import KINDS, ResolvedWorkload, Workload, WorkloadError, WorkloadKind, job_file


@pytest.mark.parametrize("kind", KINDS)
def test_every_workload_kind_is_a_job_fio_accepts(kind: str, tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    job.write_text(
        job_file(
            Workload(kind, kind, runtime_s=60).resolved(), LocalDrive(str(tmp_path / "d"), "1g"), str(tmp_path / "l")
        )
    )
    r = subprocess.run([fio_binary(), "--parse-only", str(job)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = job.read_text()
    assert "log_alternate_epoch=1" in text and "log_avg_msec=1000" in text
    if kind == "mixed_random_sweep":
        assert text.count("stonewall") == 11 and "rwmixread=100" in text and "rwmixread=0" in text
        assert "size=16g" in text and "iodepth=3" in text and "bs=4k" in text
    if kind == "consistency":
        assert "[consistency-fill]" in text and "rw=randwrite" in text and "iodepth=32" in text


def test_workload_overrides_and_bad_values() -> None:
    w = Workload("w", "rand_write", runtime_s=30, bs="8k", iodepth=64, span="2g").resolved()
    assert (w.bs, w.iodepth, w.span) == ("8k", 64, "2g")
    with pytest.raises(WorkloadError, match="bs = '4 kib'"):
        Workload("w", "rand_write", bs="4 kib").resolved()
    assert Workload("s", "mixed_seq_sweep", runtime_s=180).resolved().duration_s() == 180 * 11


def test_a_resolved_workload_is_its_own_type_and_an_unknown_kind_an_error() -> None:
    w = Workload("w", "rand_read").resolved()
    assert isinstance(w, ResolvedWorkload) and w.kind is WorkloadKind.RAND_READ and w.resolved() is w
    with pytest.raises(WorkloadError) as err:
        Workload("w", "seq_wirte").resolved()
    assert err.value.key == "kind" and "'seq_wirte' is not one of" in str(err.value)
    assert set(HEAT) == set(WorkloadKind)  # the planner's model knows the heat of every kind, guesses none


def test_runner_on_a_file_gives_live_seconds_logs_in_unix_ms_and_the_json(tmp_path: Path) -> None:
    live = []
    start_ms = time.time() * 1000
    result = run_fio(
        job_file(
            Workload("w", "seq_write", runtime_s=3).resolved(),
            LocalDrive(str(tmp_path / "d"), "128m"),
            str(tmp_path / "fio"),
        ),
        tmp_path,
        on_live=live.append,
    )
    end_ms = time.time() * 1000
    assert len(live) >= 2 and all(s.write_bps > 0 and s.read_bps == 0 for s in live)
    assert result.bw and all(start_ms - 1000 <= p.timestamp_ms <= end_ms + 1000 for p in result.bw)
    assert all(p.ddir == 1 for p in result.bw) and result.iops and result.lat
    saved = json.loads((tmp_path / "fio.json").read_text())
    assert saved["jobs"][0]["jobname"] == "w" and saved["jobs"][0]["write"]["io_bytes"] > 0


def test_runner_with_a_relative_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`thermrig run --out runs/x` gives relative folders: fio runs inside the folder, so the job file
    and the logs must still be found (the first make demo failed every run on this)."""
    monkeypatch.chdir(tmp_path)
    result = run_fio(
        job_file(Workload("w", "seq_write", runtime_s=2).resolved(), LocalDrive("d.dat", "64m"), "runs/r1/fio"),
        Path("runs/r1"),
    )
    assert result.result["jobs"][0]["write"]["io_bytes"] > 0
    assert (tmp_path / "runs" / "r1" / "fio.json").exists()


def test_runner_reports_fio_failures(tmp_path: Path) -> None:
    # /proc takes no new files: fio's open fails, the job reports error 2 and fio exits 1.
    bad = job_file(
        Workload("w", "seq_write", runtime_s=1).resolved(), LocalDrive("/proc/thermrig-no", "1m"), str(tmp_path / "f")
    )
    with pytest.raises(FioError, match="No such file or directory"):
        run_fio(bad, tmp_path)
    assert json.loads((tmp_path / "fio.json").read_text())["jobs"][0]["error"] == 2  # kept for the record


# nvme-cli `smart-log -o json` as it prints it (temperatures in Kelvin, absent sensors 0). The values are
# those of public captures from two drives: a four-sensor and a three-sensor controller.
SMART_4 = """{"critical_warning":0,"temperature":301,"avail_spare":100,"spare_thresh":5,"percent_used":15,
"data_units_read":499296134,"data_units_written":1474968593,"host_read_commands":9347931143,
"host_write_commands":51493840602,"controller_busy_time":1974546,"power_cycles":290,"power_on_hours":38313,
"unsafe_shutdowns":139,"media_errors":0,"num_err_log_entries":17,"warning_temp_time":0,"critical_comp_time":0,
"temperature_sensor_1":306,"temperature_sensor_2":301,"temperature_sensor_3":296,"temperature_sensor_4":295,
"thm_temp1_trans_count":0,"thm_temp2_trans_count":0,"thm_temp1_total_time":0,"thm_temp2_total_time":0}"""
SMART_THROTTLED = """{"warning_temp_time":7,"critical_comp_time":0,"thm_temp1_trans_count":3,
"thm_temp1_total_time":42,"thm_temp2_trans_count":1,"thm_temp2_total_time":5,"critical_warning":0,
"temperature":310,"avail_spare":100,"spare_thresh":5,"percent_used":2,"data_units_read":74547585,
"data_units_written":34180136,"power_on_hours":2000,"temperature_sensor_1":0}"""


def test_smart_log_parser_on_real_output() -> None:
    d = parse_smart_log(SMART_4)
    assert d.composite_c == pytest.approx(27.85)
    assert d.sensors_c[:5] == (
        pytest.approx(32.85),
        pytest.approx(27.85),
        pytest.approx(22.85),
        pytest.approx(21.85),
        None,
    )
    assert d.fields()["sensor4_c"] == pytest.approx(21.85) and "sensor5_c" not in d.fields()
    assert d.power_state is None and "power_state" not in d.fields()  # nvme smart-log has no power state
    assert d.fields()["data_units_written"] == 1474968593  # the drive's own count of writes, 512,000 B units
    t = parse_smart_log(SMART_THROTTLED)
    assert (t.tmt1_count, t.tmt1_time_s, t.tmt2_count, t.tmt2_time_s) == (3, 42, 1, 5)
    assert t.warning_temp_time_min == 7 and t.sensors_c[0] is None and t.composite_c == pytest.approx(36.85)
    with pytest.raises(SmartError):
        parse_smart_log("nvme: Inappropriate ioctl for device")


def test_hwmon_layout_of_an_nvme_controller(tmp_path: Path) -> None:
    # /sys/class/hwmon as the nvme driver lays it out (true hardware: stood in for by files).
    dev = tmp_path / "devices" / "nvme0"
    dev.mkdir(parents=True)
    hw = tmp_path / "hwmon" / "hwmon2"
    hw.mkdir(parents=True)
    (hw / "device").symlink_to(dev)
    (hw / "name").write_text("nvme\n")
    for i, (label, milli) in enumerate((("Composite", 36850), ("Sensor 1", 41850), ("Sensor 2", 35850)), start=1):
        (hw / f"temp{i}_input").write_text(f"{milli}\n")
        (hw / f"temp{i}_label").write_text(f"{label}\n")
    other = tmp_path / "hwmon" / "hwmon0"
    other.mkdir()
    (other / "name").write_text("acpitz\n")
    found = nvme_hwmon_dir("nvme0", tmp_path / "hwmon")
    assert found == hw
    readings = read_hwmon(hw)
    assert [(r.field, r.celsius) for r in readings] == [
        ("hwmon_composite", 36.85),
        ("hwmon_sensor1", 41.85),
        ("hwmon_sensor2", 35.85),
    ]
    assert nvme_hwmon_dir("nvme1", tmp_path / "hwmon") is None
    assert nvme_hwmon_dir("nvme", tmp_path / "hwmon") is None  # names match whole, not as substrings


def test_guard_refuses_images_with_a_partition_table_or_filesystem(tmp_path: Path) -> None:
    blank = tmp_path / "blank.img"
    blank.write_bytes(b"\0" * (8 << 20))
    assert check_target(str(blank), None, destroy=False).signatures == []
    gpt = tmp_path / "gpt.img"
    gpt.write_bytes(b"\0" * (8 << 20))
    subprocess.run(["sfdisk", "-q", str(gpt)], input="label: gpt\n,4M\n", text=True, check=True)
    with pytest.raises(UnsafeTarget, match=r"holds data signatures .*gpt.*--destroy"):
        check_target(str(gpt), None, destroy=False)
    assert check_target(str(gpt), "x", destroy=True).signatures  # named and confirmed: allowed
    fs = tmp_path / "fs.img"
    fs.write_bytes(b"\0" * (8 << 20))
    subprocess.run(["mkfs.ext4", "-q", "-F", str(fs)], check=True, capture_output=True)
    with pytest.raises(UnsafeTarget, match="ext4"):
        check_target(str(fs), None, destroy=False)


def test_guard_refuses_a_mounted_block_device_even_with_destroy() -> None:
    tree = json.loads(
        subprocess.run(
            ["lsblk", "--json", "-o", "PATH,TYPE,MOUNTPOINTS"], capture_output=True, text=True, check=True
        ).stdout
    )["blockdevices"]

    def mounted(node: dict) -> bool:
        return any(node.get("mountpoints") or []) or any(mounted(c) for c in node.get("children") or [])

    disks = [d["path"] for d in tree if d.get("type") == "disk" and mounted(d)]
    if not disks:
        machine_cannot("no mounted block device to be refused (lsblk lists none)")
    with pytest.raises(UnsafeTarget, match="mounted at"):
        check_target(disks[0], "any-serial", destroy=True)


def test_which_nvme_controller_a_target_lives_on(tmp_path: Path) -> None:
    from thermrig.drive.monitor import nvme_controller_for

    assert nvme_controller_for("/dev/nvme0n1") == "nvme0"
    assert nvme_controller_for("/dev/nvme12n1p3") == "nvme12"
    assert nvme_controller_for("/dev/sda") is None
    source = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "--target", str(tmp_path)], capture_output=True, text=True
    ).stdout.strip()
    expected = source.removeprefix("/dev/").split("n1")[0] if source.startswith("/dev/nvme") else None
    assert nvme_controller_for(str(tmp_path / "drive.dat")) == expected  # a file: the device under its filesystem


def test_snia_rounds_repeat_until_steady_or_the_limit(tmp_path: Path) -> None:
    from thermrig.analysis.consistency import snia_steady_state
    from thermrig.fio.rounds import run_rounds

    seen = []
    w = Workload("ss", "snia_steady_state", runtime_s=2, iodepth=4, max_rounds=6).resolved()
    out = run_rounds(w, LocalDrive(str(tmp_path / "d"), "64m"), tmp_path, on_round=lambda n, iops: seen.append(n))
    assert 5 <= len(out.rounds_iops) <= 6 and seen == list(range(1, len(out.rounds_iops) + 1))
    assert all(iops > 0 for iops in out.rounds_iops)
    # It stopped at the first steady window, or at the limit without one.
    assert out.steady == snia_steady_state(out.rounds_iops)
    if len(out.rounds_iops) == 6:
        assert not snia_steady_state(out.rounds_iops[:5])
    assert (tmp_path / "round-01" / "fio.json").exists() and out.results[0].iops
    with pytest.raises(WorkloadError, match="max_rounds must be 5-25"):
        Workload("ss", "snia_steady_state", max_rounds=3).resolved()
