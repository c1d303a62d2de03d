"""Workload kind "fio": a lab's own job file, checked and run against the campaign's target with
thermrig's per-second logs, one result per job. Run with the real fio on our own job files (written in
the form of fio's examples, committed in fio_jobs/) and, when THERMRIG_FIO_EXAMPLES names fio's own
examples folder (e.g. `git -C <fio clone> archive HEAD examples | tar -x -C DIR`, then DIR/examples),
on fio's examples as shipped (refused: they name their own file) and adapted as a lab would."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest
from campaign_helpers import VIRTUAL_DRIVE, CampaignFile, manifests, run_args, thermrig

from thermrig.analysis.job_summaries import job_summaries
from thermrig.analysis.throttle_summary import logs_from_fio
from thermrig.campaign.spec import CampaignError, load_campaign
from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql
from thermrig.drive.under_test import LocalDrive
from thermrig.fio.job_file import JobFileError, check_job, read_job_file, unique_job_names
from thermrig.fio.workload_run import run_workload
from thermrig.fio.workload_setup import WorkloadSetup
from thermrig.fio.workloads import Workload

OURS = Path(__file__).parent / "fio_jobs"
FIO_EXAMPLES = ("fio-rand-read.fio", "fio-seq-write.fio", "basic-verify.fio", "ssd-test.fio")
_CONFLICT = re.compile(r"^\s*(filename|directory)\s*=", re.M)


def _examples() -> list[Path]:
    folder = os.environ.get("THERMRIG_FIO_EXAMPLES")
    return [Path(folder) / name for name in FIO_EXAMPLES] if folder else []


def adapted(text: str) -> str:
    """What a lab changes in one of fio's examples: no file of its own, a short timed runtime, a small size."""
    text = _CONFLICT.sub(";", text)
    text = re.sub(r"^runtime=\d+", "runtime=2\ntime_based", text, flags=re.M)
    return re.sub(r"^size=\d+[gG]", "size=16m", text, flags=re.M)


def _run(job: Path, tmp_path: Path) -> tuple[dict[int, str], dict[str, dict], list[str]]:
    w = Workload("lab", "fio", job=str(job)).resolved()
    target = LocalDrive(str(tmp_path / "drive.dat"), "64m")
    ran = run_workload(w, WorkloadSetup(target, tmp_path / "run", lambda s: None, threading.Event(), lambda n: None))
    names = ran.logs[0][1]
    return names, job_summaries(logs_from_fio(ran.result.bw), names), [j["jobname"] for j in ran.result.result["jobs"]]


@pytest.mark.parametrize("path", [*sorted(OURS.glob("*.fio")), *_examples()], ids=lambda p: p.name)
def test_a_lab_job_file_runs_on_a_file_with_a_result_per_job(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    if _CONFLICT.search(text):  # fio's example as shipped names its own file: refused, at its line
        line = next(i for i, t in enumerate(text.splitlines(), 1) if _CONFLICT.match(t))
        with pytest.raises(JobFileError, match=rf"{re.escape(str(path))}:{line}: (filename|directory)="):
            check_job(read_job_file(path), virtual=False)
        job = tmp_path / path.name
        job.write_text(adapted(text))
    else:
        job = path
    check_job(read_job_file(job), virtual=False)
    names, summaries, fio_names = _run(job, tmp_path)
    lab = read_job_file(job)
    numjobs = {o.section: int(o.value or 1) for o in lab.options if o.key == "numjobs"}
    sections = [s for s in lab.jobs for _ in range(numjobs.get(s, numjobs.get("global", 1)))]  # clones
    assert fio_names == sections  # one fio job per section and clone
    assert list(names.values()) == list(unique_job_names(sections).values()) and list(summaries) == list(names.values())
    for name, fields in summaries.items():
        assert fields["seconds"] >= 1 and fields["mean_bw_bps"] > 0, name
    composed = (tmp_path / "run" / "job.fio").read_text()
    assert f"filename={tmp_path / 'drive.dat'}" in composed and "log_avg_msec=1000" in composed
    assert sorted(p.name for p in (tmp_path / "run").glob("fio_bw.*.log")) == [
        f"fio_bw.{i}.log" for i in range(1, len(sections) + 1)
    ]


def _job(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "lab.fio"
    path.write_text(body)
    return path


@pytest.mark.parametrize(
    ("body", "virtual", "message"),
    [
        ("[a]\nrw=write\nfilename=/dev/sdz\n", False, r"lab.fio:3: filename=/dev/sdz: thermrig sets the target"),
        ("[global]\nfilename_format=$jobnum\n[a]\n", False, r"lab.fio:2: filename_format=\$jobnum"),
        ("[a]\n; note\ndirectory=/mnt\n", False, r"lab.fio:3: directory=/mnt"),
        ("[a]\nwrite_bw_log=mine\n", False, r"lab.fio:2: write_bw_log=mine: thermrig sets fio's per-second logs"),
        ("[global]\nlog_avg_msec=500\n[a]\n", False, r"lab.fio:2: log_avg_msec=500"),
        ("[a]\ngroup_reporting\n", False, r"lab.fio:2: group_reporting: .*reports each job"),
        ("[a]\nioengine=libaio\n", True, r"lab.fio:2: ioengine=libaio: the virtual drive is served over NBD"),
        ("[a]\ninclude other.fio\n", False, r"lab.fio:2: include"),
        ("[global]\nrw=write\n", False, r"no job section"),
    ],
)
def test_what_would_conflict_is_refused_in_one_line(tmp_path: Path, body: str, virtual: bool, message: str) -> None:
    with pytest.raises(JobFileError, match=message) as info:
        check_job(read_job_file(_job(tmp_path, body)), virtual)
    assert "\n" not in str(info.value)


def test_ioengine_is_the_labs_own_on_a_file_and_clones_get_names(tmp_path: Path) -> None:
    check_job(read_job_file(_job(tmp_path, "[a]\nioengine=libaio\n")), virtual=False)
    assert unique_job_names(["w", "w", "r d"]) == {1: "w-1", 2: "w-2", 3: "r_d"}


def test_the_campaign_refuses_the_job_file_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "mine.fio").write_text("[w]\nrw=write\nioengine=libaio\n")
    text = CampaignFile("lab", dict(VIRTUAL_DRIVE)).text().replace('kind = "seq_write"', 'kind = "fio"')
    path = tmp_path / "c.toml"
    path.write_text(text + 'job = "jobs/mine.fio"\n')
    with pytest.raises(CampaignError, match=r"workload 'sw': .*jobs/mine.fio:3: ioengine=libaio"):
        load_campaign(path)
    (tmp_path / "jobs" / "mine.fio").write_text("[w]\nrw=write\n")
    assert load_campaign(path).workloads[0].job == str(tmp_path / "jobs" / "mine.fio")
    path.write_text(text.replace('kind = "fio"', 'kind = "seq_write"') + 'job = "jobs/mine.fio"\n')
    with pytest.raises(CampaignError, match=r"\[workload\] job: job is for kind = 'fio'"):
        load_campaign(path)


@pytest.mark.timeout(600)
def test_a_multi_job_file_on_the_virtual_drive(
    tmp_path: Path, influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    """The example's lab job (two stonewalled jobs) over NBD: each job's per-second log in InfluxDB under
    its own name, a job_summary point and a manifest entry per job, the run summary on the last job."""
    job = Path(__file__).parents[2] / "examples" / "jobs" / "lab-write-read.fio"
    (tmp_path / "lab.fio").write_text(job.read_text().replace("runtime=40", "runtime=4"))
    text = CampaignFile("labvirt", dict(VIRTUAL_DRIVE)).text().replace('kind = "seq_write"', 'kind = "fio"')
    path = tmp_path / "c.toml"
    path.write_text(text + 'job = "lab.fio"\n')
    out = tmp_path / "runs"
    r = thermrig(*run_args(path, out), env=influx_env, timeout=580)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (manifest,) = manifests(out).values()
    jobs = manifest["workload_result"]["jobs"]
    assert list(jobs) == ["seq-write", "rand-read"]
    assert all(j["seconds"] >= 3 and j["mean_bw_bps"] > 0 for j in jobs.values())
    assert manifest["workload_result"]["seconds"] == jobs["rand-read"]["seconds"]  # the run's: the last job
    composed = next(out.glob("*/job.fio")).read_text()
    assert "ioengine=nbd" in composed and "uri=nbd+unix://" in composed
    fio = json.loads(next(out.glob("*/fio.json")).read_text())
    assert fio["jobs"][0]["write"]["io_bytes"] > 0 and fio["jobs"][1]["read"]["io_bytes"] > 0
    where = "\"campaign\" = 'labvirt'"
    stored = influxql(influx, f'SELECT count(bw_bps) FROM fio_interval WHERE {where} GROUP BY "job"')
    assert {s.tags["job"] for s in stored} == {"seq-write", "rand-read"}
    summaries = influxql(influx, f'SELECT onset_s, seconds FROM job_summary WHERE {where} GROUP BY "job"')
    assert {s.tags["job"]: s.values[0][2] for s in summaries} == {k: v["seconds"] for k, v in jobs.items()}
