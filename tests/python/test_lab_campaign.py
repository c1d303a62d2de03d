"""A campaign on a simulated lab (`thermrig run FILE --lab COORDINATOR`): a real labgrid coordinator and
three exporters, each serving a simulated rig at real time whose virtual drive sits in the place's "test
PC" (a real `fio --server` on a loopback port). The runs spread over the three places at once, each point
tagged with its rig, place, test PC and firmware; a place whose test PC dies mid-run leaves the campaign
going on the others and names the failed run, which `--resume` reruns; every place released."""

from __future__ import annotations

import getpass
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from campaign_helpers import manifests
from waiting import wait_for

from thermrig.db.influx_settings import DEFAULT_DATABASE, InfluxSettings
from thermrig.db.local_server import free_port
from thermrig.db.query import influxql
from thermrig.firmware_identity import checkout_version
from thermrig.lab.client import LabClient
from thermrig.lab.influx_users import Credentials, InfluxAdmin
from thermrig.lab.rig_place import tag_value
from thermrig.lab_world.world import CAMPAIGN_RIG, PLACES, TAGS, Lab, Proc, campaign, simulated_lab
from thermrig.link.rig_link import RigLink
from thermrig.settings import find_tool

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with simulated_lab(tmp_path_factory.mktemp("lab"), list(PLACES), CAMPAIGN_RIG) as lab:
        for name in PLACES:
            lab.add_place(name, TAGS)
        yield lab


@pytest.fixture(autouse=True)
def rigs_left_safe(lab: Lab) -> Iterator[None]:
    """After each test every rig is idle with no fault latched (a test that made one, cleared it as an
    operator would): each campaign made its rigs safe itself, not by going silent, so the next one starts."""
    yield
    for name, rig in lab.rigs.items():
        assert wait_for(lambda r=rig: r.actuators()[0] == 0.0, 30), f"{name} still heating"
        faults = latched(rig.port)
        assert not faults, f"{name} latched {faults}"


def latched(port: str) -> str:
    """The faults the rig at port has latched (its telemetry's), by name; "" when none."""
    with RigLink(port) as link:
        link.hello()
        return link.next_telemetry(5.0).faults.name or ""


def run_cmd(path: Path, out: Path, *more: str) -> list[str]:
    # no --no-prompt and no stdin: a prompt would fail the run (the places fix the only physical factor)
    return [sys.executable, "-m", "thermrig.cli", "run", str(path), "--out", str(out), *more]


def holders(lab: Lab) -> dict[str, str | None]:
    with LabClient(lab.address) as client:
        return {p.name: p.acquired for p in client.places()}


def campaign_reservations(lab: Lab) -> int:
    """How many reservations at the coordinator this user (the campaign's) has."""
    with LabClient(lab.address) as client:
        return sum(owner.endswith("/" + getpass.getuser()) for owner, _token in client.reservations())


def series(influx: InfluxSettings, measurement: str, name: str) -> dict[tuple[str, ...], int]:
    """Points per (place, rig, test_pc, firmware) of a campaign's measurement."""
    query = (
        f"SELECT count(*) FROM {measurement} WHERE \"campaign\" = '{name}' "
        'GROUP BY "place", "rig", "test_pc", "firmware"'
    )
    out = {}
    for s in influxql(influx, query):
        key = tuple(s.tags.get(k, "") for k in ("place", "rig", "test_pc", "firmware"))
        out[key] = max(v for v in s.values[0][1:] if isinstance(v, int))
    return out


def test_a_campaign_spreads_over_three_places_every_point_tagged(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    path = campaign(tmp_path, "spread", lab.address, runs=6, ssh_key=lab.ssh_key)
    out = tmp_path / "runs"
    done = subprocess.run(run_cmd(path, out), env=influx_env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=540)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "campaign spread finished on rig-a, rig-b, rig-c: 6 of 6 runs ok" in done.stdout, done.stdout
    runs = manifests(out)
    assert len(runs) == 6 and all(m["status"] == "ok" for m in runs.values())
    by_place = {name: [r for r, m in runs.items() if m["lab"]["place"] == name] for name in PLACES}
    assert all(len(r) == 2 for r in by_place.values()), by_place  # two runs each, at once
    (firmware,) = {m["lab"]["firmware"] for m in runs.values()}  # the rigs' HELLO version
    assert all(m["versions"]["firmware"].endswith(f" {firmware}") for m in runs.values())
    assert all(m["drive"]["target"] == "127.0.0.1:virtual" for m in runs.values())
    assert all(m["drive"]["telemetry"].startswith("nvme smart-log of /dev/nvme0 over SSH") for m in runs.values())
    for measurement in ("rig_telemetry", "fio_interval", "run_summary", "drive_smart"):
        tagged = series(influx, measurement, "spread")
        assert {k[0] for k in tagged} == set(PLACES), (measurement, tagged)
        for (place, rig, test_pc, fw), count in tagged.items():
            assert (rig, test_pc, fw) == (f"exp-{place}", "127.0.0.1", firmware)
            assert count > 0
    assert sorted(json.loads((out / "state.json").read_text())["completed"]) == sorted(runs)
    assert set(holders(lab).values()) == {None}


def recorded(influx: InfluxSettings, name: str) -> dict[str, set[str]]:
    """measurement -> the fields and tags any point of the campaign carries."""
    found: dict[str, set[str]] = {}
    for measurement in ("rig_telemetry", "fio_interval", "run_summary", "drive_smart", "phase"):
        for s in influxql(influx, f"SELECT * FROM {measurement} WHERE \"campaign\" = '{name}'"):
            columns = {c for i, c in enumerate(s.columns) if any(row[i] is not None for row in s.values)}
            found.setdefault(measurement, set()).update(columns - {"time"})
    return found


def test_a_sealed_campaign_records_what_an_open_one_does(
    lab: Lab, tmp_path: Path, isolated_env: dict[str, str], influx_env: dict[str, str], influx: InfluxSettings
) -> None:
    """The same three runs on the sealed lab (fio through the SSH forwards, the lab's InfluxDB with
    authentication on: written as the agents' write-only user, read back for the run summaries as the
    analysts' read-only one) and on the open one (fio straight, an InfluxDB without authentication): the
    same measurements, fields and tags in InfluxDB, the same manifest entries."""
    assert lab.influx is not None
    sealed_env = {**isolated_env, **lab.influx.env(), "COLUMNS": "150"}
    kept: dict[str, tuple[dict[str, set[str]], set[str]]] = {}
    for name, insecure, env, settings in (("sealed", False, sealed_env, lab.influx.settings),
                                          ("open", True, influx_env, influx)):  # fmt: skip
        path = campaign(tmp_path, name, lab.address, runs=3, ssh_key=lab.ssh_key, insecure=insecure)
        out = tmp_path / name
        done = subprocess.run(run_cmd(path, out), env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=400)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        runs = manifests(out)
        kept[name] = (recorded(settings, name), {k for m in runs.values() for k in m})
    sealed, opened = kept["sealed"], kept["open"]
    assert sealed[0]["fio_interval"] and sealed[0]["drive_smart"] and sealed[0]["run_summary"], sealed
    assert sealed == opened


def test_summaries_the_analysts_cannot_read_back_say_why_and_analyze_completes_them(
    lab: Lab, tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    """On the sealed lab, the analysts' read privilege revoked after the campaign's preflight passed: the
    runs record (the agents' user writes), the read back of their summaries fails, and the campaign says
    the query's own error, not "points not yet in InfluxDB", exits 1, and names `thermrig analyze`, which
    completes the summaries once the privilege is back."""
    assert lab.influx is not None and isinstance(lab.influx.admin, Credentials)
    admin = InfluxAdmin(lab.influx.url, lab.influx.admin)
    env = {**isolated_env, **lab.influx.env(), "COLUMNS": "300"}
    path = campaign(tmp_path, "unread", lab.address, runs=3, ssh_key=lab.ssh_key)
    out = tmp_path / "runs"
    proc = Proc.start(run_cmd(path, out), tmp_path, env)
    try:
        assert wait_for(lambda: any(x.startswith("campaign unread:") for x in proc.lines), 120), proc.output()
        admin.query(f"REVOKE READ ON {DEFAULT_DATABASE} FROM {lab.influx.analyst.user}")  # after the preflight
        assert proc.popen.wait(400) == 1, proc.output()
    finally:
        admin.query(f"GRANT READ ON {DEFAULT_DATABASE} TO {lab.influx.analyst.user}")
        proc.stop()
    said = proc.output()
    assert "campaign unread finished, its summaries not read back" in said, said
    assert "not authorized" in said, said  # the query's own error
    assert "once its points are all in InfluxDB" not in said
    assert "`thermrig analyze unread` completes them" in said
    runs = manifests(out)
    assert len(runs) == 3 and all(m["status"] == "ok" and m["analysed"] is False for m in runs.values())
    done = subprocess.run([sys.executable, "-m", "thermrig.cli", "analyze", "unread"], env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(m["analysed"] is True for m in manifests(out).values()), done.stdout + done.stderr


def test_the_lab_influxdb_refuses_a_write_without_credentials_or_as_the_analysts(lab: Lab) -> None:
    """The sealed lab's InfluxDB: a write without credentials is refused (401), one as the analysts'
    read-only user too (403), and nothing is written; the agents' user writes."""
    assert lab.influx is not None
    url, db = lab.influx.url, "thermrig"
    http = urllib3.PoolManager(timeout=10.0, retries=False)

    def write(who: Credentials | None, value: int) -> int:
        auth = f"&u={who.user}&p={who.password}" if who else ""
        return http.request("POST", f"{url}/write?db={db}{auth}", body=f"door,who=w{value} v={value}i").status

    def written() -> set[str]:
        admin = InfluxSettings(url, f"{db}/autogen", db, token=lab.influx.admin.token)  # type: ignore[union-attr]
        found = influxql(admin, "SELECT v, who FROM door")
        return {str(row[s.columns.index("who")]) for s in found for row in s.values}

    said = {"none": write(None, 1), "analyst": write(lab.influx.analyst, 2)}
    print("InfluxDB write answered:", said)
    assert said == {"none": 401, "analyst": 403}, said
    assert written() == set(), written()
    assert write(lab.influx.agent, 3) == 204
    assert written() == {"w3"}


def test_a_place_lost_mid_run_names_the_run_and_resume_reruns_only_it(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str]
) -> None:
    path = campaign(tmp_path, "lose", lab.address, runs=6, runtime_s=4, ssh_key=lab.ssh_key)
    out = tmp_path / "runs"
    proc = Proc.start(run_cmd(path, out), tmp_path, influx_env)
    try:
        in_workload = wait_for(lambda: any(x.startswith("rig-b: ") and ": workload" in x for x in proc.lines), 300)
        assert in_workload, proc.output()
        lost_run = next(x for x in proc.lines if x.startswith("rig-b: ") and ": workload" in x).split()[1]
        lab.fio_servers["rig-b"].stop()  # the test PC's fio server dies under the run
        assert proc.popen.wait(400) == 1, proc.output()
    finally:
        proc.stop()
    text = proc.output()
    assert f"place rig-b lost during run {lost_run}: its test PC's fio server at 127.0.0.1," in text
    assert f"failed run {lost_run} on rig-b: its test PC's fio server at 127.0.0.1," in text
    assert "5 of 6 ok" in text
    runs = manifests(out)
    assert runs[lost_run]["status"] == "failed" and "fio server" in runs[lost_run]["error"]
    others = {r: m for r, m in runs.items() if r != lost_run}
    assert len(others) == 5 and all(m["status"] == "ok" for m in others.values())  # rig-b's later runs went elsewhere
    assert set(holders(lab).values()) == {None}

    lab.start_fio_server("rig-b")  # the place's test PC is back
    again = subprocess.run(run_cmd(path, out, "--resume"), env=influx_env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "6 of 6 runs ok" in again.stdout
    rerun = manifests(out)
    assert rerun[lost_run] == runs[lost_run]  # the lost attempt keeps its record; the retry is its own run ID
    assert rerun[f"{lost_run}.2"]["status"] == "ok" and rerun[f"{lost_run}.2"]["plan_run"] == lost_run
    assert {r: m["start_utc"] for r, m in rerun.items() if not r.startswith(lost_run)} == {
        r: m["start_utc"] for r, m in others.items()
    }  # only the failed run ran again
    assert set(holders(lab).values()) == {None}


def forwards_of(pid: int, remote_port: int) -> list[int]:
    """The ssh processes under `pid` that forward to remote_port on a test PC's loopback (fio's forward): ssh
    by any path (the tests' ssh runs the real one by its full path)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                argv = (Path("/proc") / str(child) / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if Path(argv[0].decode()).name == "ssh" and any(
                a.endswith(f":127.0.0.1:{remote_port}".encode()) for a in argv
            ):
                found.append(child)
    return found


def test_a_dropped_ssh_forward_mid_run_is_the_place_lost_and_resume_reruns_only_it(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str]
) -> None:
    """fio reaches each test PC's fio server through an SSH forward the place's testbed opens: the forward
    killed under a run is handled as a lost fio server (one line, the run failed, the others go on)."""
    path = campaign(tmp_path, "dropped", lab.address, runs=6, runtime_s=4, ssh_key=lab.ssh_key)
    out = tmp_path / "runs"
    proc = Proc.start(run_cmd(path, out), tmp_path, influx_env)
    try:
        in_workload = wait_for(lambda: any(x.startswith("rig-c: ") and ": workload" in x for x in proc.lines), 300)
        assert in_workload, proc.output()
        lost_run = next(x for x in proc.lines if x.startswith("rig-c: ") and ": workload" in x).split()[1]
        (forward,) = forwards_of(proc.popen.pid, lab.ports["rig-c"][0])  # this place's, the one open now
        os.kill(forward, signal.SIGKILL)
        assert proc.popen.wait(400) == 1, proc.output()
    finally:
        proc.stop()
    text = proc.output()
    lost = [x for x in text.splitlines() if x.startswith(f"place rig-c lost during run {lost_run}: ")]
    assert len(lost) == 1 and "the SSH forward 127.0.0.1:" in lost[0] and "was lost" in lost[0], text
    assert f"failed run {lost_run} on rig-c: the SSH forward 127.0.0.1:" in text
    runs = manifests(out)
    assert runs[lost_run]["status"] == "failed" and "SSH forward" in runs[lost_run]["error"]
    assert sorted(r for r, m in runs.items() if m["status"] == "ok") == sorted(set(runs) - {lost_run})
    assert "5 of 6 ok" in closing(text) and set(holders(lab).values()) == {None}
    again = subprocess.run(run_cmd(path, out, "--resume"), env=influx_env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "6 of 6 runs ok" in closing(again.stdout) and manifests(out)[f"{lost_run}.2"]["status"] == "ok"


def closing(text: str) -> str:
    [line] = [x for x in text.splitlines() if x.startswith("campaign ") and " finished" in x]
    return line


def test_a_place_lost_for_good_leaves_the_campaign_to_the_others_and_resume_finishes_there(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str]
) -> None:
    """Nine runs on three places; rig-b's test PC dies in its second run and stays down, through the resume:
    only that run and that place are named failed, and the resume reruns it on a healthy place."""
    path = campaign(tmp_path, "gone", lab.address, runs=9, runtime_s=4, ssh_key=lab.ssh_key)
    out = tmp_path / "runs"
    proc = Proc.start(run_cmd(path, out), tmp_path, influx_env)

    def workloads(place: str) -> list[str]:
        found = [x.split()[1] for x in list(proc.lines) if x.startswith(f"{place}: ") and ": workload" in x]
        return list(dict.fromkeys(found))

    try:
        assert wait_for(lambda: len(workloads("rig-b")) >= 2, 400), proc.output()
        lost_run = workloads("rig-b")[1]
        lab.fio_servers["rig-b"].stop()  # never brought back in this test's campaign
        assert proc.popen.wait(400) == 1, proc.output()
        text = proc.output()
        assert f"place rig-b lost during run {lost_run}: its test PC's fio server at 127.0.0.1," in text
        assert [x for x in text.splitlines() if x.startswith("failed run ")] == [
            x for x in text.splitlines() if x.startswith(f"failed run {lost_run} on rig-b: ")
        ]
        line = closing(text)
        assert f"finished with failed runs ({lost_run}) on rig-b: 8 of 9 ok" in line, line
        assert "rig-a" not in line and "rig-c" not in line, line
        assert "not run" not in text
        runs = manifests(out)
        assert runs[lost_run]["status"] == "failed"
        assert sorted(r for r, m in runs.items() if m["status"] == "ok") == sorted(set(runs) - {lost_run})
        assert set(holders(lab).values()) == {None}

        again = subprocess.run(run_cmd(path, out, "--resume"), env=influx_env, capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        assert "place rig-b left out: its test PC's fio server at 127.0.0.1," in again.stdout, again.stdout
        assert "9 of 9 runs ok" in closing(again.stdout) and "Error" not in again.stdout + again.stderr
        rerun = manifests(out)[f"{lost_run}.2"]
        assert rerun["status"] == "ok" and rerun["lab"]["place"] in ("rig-a", "rig-c")
        assert set(holders(lab).values()) == {None}
    finally:
        proc.stop()
        lab.start_fio_server("rig-b")


def test_a_place_whose_exporter_stops_mid_run_is_lost_and_the_others_finish(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str]
) -> None:
    path = campaign(tmp_path, "unplugged", lab.address, runs=6, runtime_s=4, ssh_key=lab.ssh_key)
    out = tmp_path / "runs"
    proc = Proc.start(run_cmd(path, out), tmp_path, influx_env)
    try:
        in_workload = wait_for(lambda: any(x.startswith("rig-a: ") and ": workload" in x for x in proc.lines), 300)
        assert in_workload, proc.output()
        lost_run = next(x for x in proc.lines if x.startswith("rig-a: ") and ": workload" in x).split()[1]
        lab.exporters["exp-rig-a"].stop()  # the rig's exporter and its ser2net gone: the rig is out of reach
        assert proc.popen.wait(400) == 1, proc.output()
    finally:
        proc.stop()
        lab.start_exporter("exp-rig-a", lab.folder / "rig-a.yaml", "rig-a")
    text = proc.output()
    assert f"place rig-a lost during run {lost_run}: " in text and f"failed run {lost_run} on rig-a: " in text
    runs = manifests(out)
    assert runs[lost_run]["status"] == "failed"
    assert sorted(r for r, m in runs.items() if m["status"] == "ok") == sorted(set(runs) - {lost_run})
    assert len(runs) == 6 and set(holders(lab).values()) == {None}
    line = closing(text)
    assert f"({lost_run}) on rig-a: 5 of 6 ok" in line and "rig-b" not in line and "rig-c" not in line, line
    assert wait_for(lambda: lab.rigs["rig-a"].actuators()[0] == 0.0, 60)  # the rig went safe on its own
    with RigLink(lab.rigs["rig-a"].port) as link:  # its host-lost fault latched: cleared as an operator would
        link.hello()
        link.command("CLEAR")
    again = subprocess.run(run_cmd(path, out, "--resume"), env=influx_env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "6 of 6 runs ok" in closing(again.stdout) and manifests(out)[f"{lost_run}.2"]["status"] == "ok"


def test_a_stopped_campaign_releases_every_place_and_leaves_the_rigs_safe(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str]
) -> None:
    """Also `lab status` while it runs: how far a place is and the firmware its rig said it runs."""
    path = campaign(tmp_path, "stopped", lab.address, runs=3, runtime_s=30, ssh_key=lab.ssh_key)
    proc = Proc.start(run_cmd(path, tmp_path / "runs"), tmp_path, influx_env)
    try:
        in_workload = wait_for(lambda: any(": workload" in x for x in proc.lines), 300)
        assert in_workload, proc.output()
        place = next(x for x in proc.lines if ": workload" in x).split(":")[0]  # in its 30 s workload now
        assert wait_for(lambda: "workload" in comments(lab)[place], 30), (comments(lab), proc.output())
        row = lab_status(lab, influx_env)[place]
        fw = tag_value(rigsim_version())
        verdict = "current" if fw == tag_value(checkout_version()) else "differs"
        assert f"thermrig run stopped (pid {proc.popen.pid}): run 1 of 1 here (stopped-" in row, row
        assert re.search(r"workload; \d/3 done", row) and f"{fw}: {verdict}" in row, row
        assert wait_for(lambda: sum(": workload" in x for x in proc.lines) == 3, 300), proc.output()
        me = {h for h in holders(lab).values()}
        assert len(me) == 1 and None not in me  # all three held by us
        os.kill(proc.popen.pid, signal.SIGTERM)  # as Ctrl-C (`systemctl stop`, kill)
        assert proc.popen.wait(120) == 130, proc.output()
    finally:
        proc.stop()
    assert "campaign interrupted: every place released, rigs safe" in proc.output()
    assert set(holders(lab).values()) == {None}
    for rig in lab.rigs.values():
        assert wait_for(lambda r=rig: r.actuators()[0] == 0.0, 30)  # heater off


def test_a_second_campaign_wanting_the_same_places_waits_and_runs_after(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str]
) -> None:
    """The first holds every place (a long workload) until it is stopped once the second says it waits."""
    long = campaign(tmp_path, "first", lab.address, runs=3, runtime_s=120, ssh_key=lab.ssh_key)
    first = Proc.start(run_cmd(long, tmp_path / "a"), tmp_path, influx_env)
    second = None
    try:
        all_three = wait_for(
            lambda: sum(": workload" in x for x in first.lines) == 3 or first.popen.poll() is not None, 300
        )
        assert all_three and first.popen.poll() is None, first.output()
        second = Proc.start(
            run_cmd(campaign(tmp_path, "second", lab.address, runs=3, ssh_key=lab.ssh_key), tmp_path / "b"),
            tmp_path,
            influx_env,
        )
        waiting = wait_for(lambda: "waiting for 3 of 3 places matching the tags" in second.lines, 120)
        assert waiting, second.output()
        assert not any(": equilibrium" in x for x in second.lines)
        os.kill(first.popen.pid, signal.SIGTERM)
        assert first.popen.wait(120) == 130, first.output()
        assert second.popen.wait(300) == 0, second.output()
    finally:
        first.stop()
        if second is not None:
            second.stop()
    first_end = max(m["end_utc"] for m in manifests(tmp_path / "a").values())
    second_start = min(m["start_utc"] for m in manifests(tmp_path / "b").values())
    assert second_start > first_end
    assert set(holders(lab).values()) == {None}


def rigsim_version() -> str:
    """The version stamp the simulated rigs' rigsim was built with (what their HELLO says)."""
    header = find_tool("rigsim").parent / "rig_version.h"
    return header.read_text().split('"')[1]


def comments(lab: Lab) -> dict[str, str]:
    with LabClient(lab.address) as client:
        return {p.name: p.comment for p in client.places()}


def lab_status(lab: Lab, env: dict[str, str]) -> dict[str, str]:
    """`thermrig lab status`'s row of each place, on one line each."""
    cmd = [sys.executable, "-m", "thermrig.cli", "lab", "status", "-x", lab.address]
    done = subprocess.run(cmd, env={**env, "COLUMNS": "400"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {line.split()[1]: line for line in done.stdout.splitlines() if line.split()[1:2] and "rig-" in line}


def test_a_place_that_fails_its_start_check_is_left_out_and_the_others_run(
    lab: Lab, tmp_path: Path, influx_env: dict[str, str]
) -> None:
    path = campaign(tmp_path, "leftout", lab.address, runs=2, ssh_key=lab.ssh_key)
    out = tmp_path / "runs"
    lab.fio_servers["rig-c"].stop()
    try:
        with subprocess.Popen(run_cmd(path, out), env=influx_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, stdin=subprocess.DEVNULL) as proc:  # fmt: skip
            assert proc.stdout is not None
            said = []
            while not (said and said[-1].startswith("place rig-c left out: ")):
                line = proc.stdout.readline()
                assert line, "".join(said) + proc.communicate()[1]
                said.append(line)
            # Let go at once, while the campaign runs on the others: free for another user, no reservation.
            free, ours = holders(lab)["rig-c"], campaign_reservations(lab)
            running = proc.poll() is None
            stdout, stderr = proc.communicate(timeout=400)
            stdout = "".join(said) + stdout
    finally:
        lab.start_fio_server("rig-c")
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    assert running and free is None and ours == 2, (running, free, ours)
    fio_port = lab.ports["rig-c"][0]
    left = [x for x in stdout.splitlines() if x.startswith("place rig-c left out: ")]
    assert (
        len(left) == 1 and f"its test PC's fio server at 127.0.0.1,{fio_port} (through SSH) does not answer" in left[0]
    ), left
    assert "campaign leftout finished on rig-a, rig-b: 2 of 2 runs ok" in stdout, stdout
    runs = manifests(out)
    assert len(runs) == 2 and {m["lab"]["place"] for m in runs.values()} <= {"rig-a", "rig-b"}
    assert all(m["status"] == "ok" for m in runs.values())
    assert set(holders(lab).values()) == {None}


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_bad_input_is_one_line_and_leaves_nothing_locked(lab: Lab, tmp_path: Path, influx_env: dict[str, str]) -> None:
    outs = iter(range(100))

    def run(path: Path, *more: str) -> str:
        cmd = run_cmd(path, tmp_path / f"out-{next(outs)}", *more)
        result = subprocess.run(cmd, env=influx_env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                timeout=120)  # fmt: skip
        return one_error_line(result)

    path = campaign(tmp_path, "bad", lab.address, runs=1, ssh_key=lab.ssh_key)
    text = path.read_text()
    path.write_text(text.replace('board = "sim"', 'board = "pico"'))
    assert run(path) == f"error: no place at {lab.address} matches board=pico (places: rig-a, rig-b, rig-c)"
    path.write_text(text.replace('slot = ["top"]', 'slot = ["bottom"]'))
    line = run(path)
    assert line.startswith("error: run bad-") and "needs slot=bottom: no place has that hardware" in line
    path.write_text(text.replace(f'coordinator = "{lab.address}"\n', ""))
    assert run(path) == f'error: {path}: [lab] names no coordinator: add coordinator = "HOST:PORT" or pass --lab'
    nobody = f"127.0.0.1:{free_port()}"
    assert run(path, "--lab", nobody).startswith(f"error: no labgrid coordinator at {nobody}")
    path.write_text(text.replace('target = "virtual"\nscale = 0.05', 'target = "/dev/nvme0n1"'))
    assert run(path) == (
        f"error: {path}: [drive] target /dev/nvme0n1 is a block device on each place's test PC and fio writes "
        "over it: pass --destroy"
    )
    path.write_text(text)
    # no place passes its start check (rig-b's SSH down, rig-a's and rig-c's fio servers): one line naming each
    lab.ssh_servers["rig-b"].stop()
    lab.fio_servers["rig-a"].stop()
    lab.fio_servers["rig-c"].stop()
    try:
        line = run(path)
    finally:
        lab.start_test_pc_ssh("rig-b")
        lab.start_fio_server("rig-a")
        lab.start_fio_server("rig-c")
    assert line.startswith("error: no place passed its start check: place rig-"), line
    ssh_port = lab.ports["rig-b"][1]  # the test PC's SSH, which its rig's serial port is reached through too
    assert "place rig-b: its rig's serial port at 127.0.0.1:" in line, line
    assert f"ssh to {getpass.getuser()}@127.0.0.1:{ssh_port} for the SSH forward" in line, line
    for place in ("rig-a", "rig-c"):
        fio_port = lab.ports[place][0]
        assert f"place {place}: its test PC's fio server at 127.0.0.1,{fio_port} (through SSH) does not answer" in line
    assert set(holders(lab).values()) == {None}
    assert not list(Path(influx_env["XDG_RUNTIME_DIR"]).rglob("lab/locks/*.json"))  # our lock records gone


def test_a_coordinator_restarted_mid_campaign(lab: Lab, tmp_path: Path, influx_env: dict[str, str]) -> None:
    """The coordinator restarts while every place runs: its acquisitions and reservations are lost, and each
    exporter exits with it (labgrid's does; its service starts it again, as here), its ser2net with it, so
    every place's rig is out of reach: each place is lost, its run failed, the rest not run, every place
    released, nothing left to cancel; once the rigs' latched HOST_LOST is cleared, a resume finishes."""
    path = campaign(tmp_path, "restart", lab.address, runs=6, runtime_s=4, ssh_key=lab.ssh_key)
    out = tmp_path / "runs"
    proc = Proc.start(run_cmd(path, out), tmp_path, influx_env)
    try:
        in_workload = wait_for(lambda: any(": workload" in x for x in proc.lines), 300)
        assert in_workload, proc.output()
        lab.restart_coordinator()
        for name in PLACES:
            exporter = lab.exporters[f"exp-{name}"]
            if exporter.popen.poll() is None:
                exporter.popen.wait(60)  # it exits when it loses the coordinator
            lab.start_exporter(f"exp-{name}", lab.folder / f"{name}.yaml", name)
        proc.popen.wait(400)
    finally:
        proc.stop()
    text = proc.output()
    assert proc.popen.returncode == 1, text
    assert "error:" not in text, text  # the reservations the coordinator lost are gone: nothing to cancel
    runs = manifests(out)
    lost = {r for r, m in runs.items() if m["status"] == "failed"}
    assert len(lost) == len(PLACES) and all(f"failed run {r} on " in text for r in lost), text
    assert all(f"place {name} lost during run " in text for name in PLACES), text
    [not_run] = [x for x in text.splitlines() if x.startswith("not run (no place left that can): ")]
    assert len(not_run.split(": ", 1)[1].split(", ")) == 6 - len(lost), not_run
    line = closing(text)
    assert "on rig-a, rig-b, rig-c: 0 of 6 ok" in line and all(r in line for r in lost), line
    assert set(holders(lab).values()) == {None} and campaign_reservations(lab) == 0
    for name in PLACES:  # left heating by a host that went away: safe on its own, HOST_LOST latched
        assert wait_for(lambda name=name: lab.rigs[name].actuators()[0] == 0.0, 60)
        with RigLink(lab.rigs[name].port) as link:  # cleared as an operator would
            link.hello()
            link.command("CLEAR")
    again = subprocess.run(run_cmd(path, out, "--resume"), env=influx_env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=400)  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "6 of 6 runs ok" in closing(again.stdout)
    assert set(holders(lab).values()) == {None}
