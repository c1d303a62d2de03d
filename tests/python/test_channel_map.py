"""The host follows the channel map the rig declares in HELLO: the map's reading, and a rig with six
thermocouples (build/host/rigsim6) watched, recorded, queried and run through a campaign with no host edit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign_helpers import CampaignFile, file_drive, manifests, run_args, thermrig

from thermrig.db.influx_settings import InfluxSettings
from thermrig.db.query import influxql
from thermrig.protocol.channels import ChannelError, ChannelKind, ChannelMap
from thermrig.protocol.frame import decode
from thermrig.protocol.messages import ProtocolError, Telemetry
from thermrig.settings import find_tool
from thermrig.sim.simulated_rig import SimulatedRig

V1_MAP = "tc0:drive_ctrl,tc1:drive_nand,tc2:heatsink,tc3:chassis_air,amb:ambient_t,rh:ambient_rh,rpm0:fan0,rpm1:fan1"
TEL = (
    b"42 TEL up=123456 tc0=-2000:01 tc1=4125:00 tc2=0:00 tc3=6999:08 amb=2250:00 rh=400:00 rpm0=1440:00 "
    b"rpm1=0:40 heat=1000 fan0=400 fan1=0 air=4500 hen=1 hlim=1000 flt=0201 err=3*D29F"
)
RIGSIM6 = find_tool("rigsim").with_name("rigsim6")
SIX = ("drive_ctrl", "drive_nand", "heatsink", "chassis_air", "slot_air", "inlet_air")


def test_the_map_gives_kinds_units_and_field_names() -> None:
    m = ChannelMap.parse(V1_MAP)
    assert list(m) == ["tc0", "tc1", "tc2", "tc3", "amb", "rh", "rpm0", "rpm1"] and m["tc3"] == "chassis_air"
    assert [c.field for c in m.channels] == [
        *("drive_ctrl_c", "drive_nand_c", "heatsink_c", "chassis_air_c", "ambient_c"),
        *("ambient_rh_pct", "fan0_rpm", "fan1_rpm"),
    ]
    assert m.channel("amb").status_field == "ambient_status" and m.channel("rh").status_field == "ambient_rh_status"
    assert [c.key for c in m.of_kind(ChannelKind.THERMOCOUPLE)] == ["tc0", "tc1", "tc2", "tc3"]
    assert m.key_of("chassis_air") == "tc3" and str(m) == V1_MAP
    with pytest.raises(ChannelError, match="no channel 'slot_air' \\(it has drive_ctrl, "):
        m.key_of("slot_air")
    for bad, why in (("tc0", "not key:name"), ("volt0:psu", "not one of"), ("tc0:a,tc0:b", "repeats")):
        with pytest.raises(ChannelError, match=why):
            ChannelMap.parse(bad)


def test_telemetry_is_read_by_the_map() -> None:
    frame = decode(TEL)
    tel = Telemetry.from_frame(frame, ChannelMap.parse(V1_MAP))
    assert tel.named("chassis_air").value == 69.99 and tel.named("ambient_rh").value == 40.0
    assert tel.temps["tc0"].value == -20.0 and tel.rpm["rpm1"].status == 0x40 and tel.humidity.value == 40.0
    before_hello = Telemetry.from_frame(frame)  # named by key until the map is known
    assert before_hello.named("tc3").value == 69.99
    assert before_hello.with_channels(ChannelMap.parse(V1_MAP)).named("chassis_air").value == 69.99
    with pytest.raises(ProtocolError, match="not the HELLO map"):
        Telemetry.from_frame(frame, ChannelMap.parse(V1_MAP.replace("rpm1:fan1", "rpm1:fan1,tc4:slot_air")))


@pytest.fixture
def env(influx_env: dict[str, str]) -> dict[str, str]:
    return {**influx_env, "THERMRIG_RIGSIM": str(RIGSIM6)}


@pytest.fixture
def sim6(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatedRig]:
    if not RIGSIM6.exists():
        pytest.fail(f"{RIGSIM6} is missing: run `make build`")
    monkeypatch.setenv("THERMRIG_RIGSIM", str(RIGSIM6))
    with SimulatedRig() as rig:  # real time: the commands below watch and record it as they would a rig
        yield rig


def test_six_thermocouples_watched_recorded_and_queried(
    sim6: SimulatedRig, env: dict[str, str], influx: InfluxSettings
) -> None:
    info = thermrig("rig", "info", "--port", sim6.port, env=env)
    assert info.returncode == 0, info.stderr
    assert "tc4=slot_air" in info.stdout and "tc5=inlet_air" in info.stdout
    watch = thermrig("rig", "watch", "--port", sim6.port, "--seconds", "1.5", env=env)
    assert watch.returncode == 0, watch.stderr
    assert all(name in watch.stdout for name in SIX)

    rec = thermrig("rig", "record", "--port", sim6.port, "--run", "six", "--seconds", "2", env=env)
    assert rec.returncode == 0, rec.stdout[-2000:] + rec.stderr[-2000:]
    fields = ", ".join(f"last({n}_c) AS {n}" for n in SIX)
    q = thermrig("query", f"SELECT {fields} FROM rig_telemetry WHERE run='six'", "--format", "json", env=env)
    assert q.returncode == 0, q.stderr
    [series] = json.loads(q.stdout)
    row = dict(zip(series["columns"], series["values"][0], strict=True))
    room = sim6.plant.room_c
    assert room is not None
    assert abs(row["inlet_air"] - room) < 1.5  # the plant put tc5 at the chassis inlet, room temperature
    assert abs(row["slot_air"] - sim6.plant.slot_air_c) < 1.5
    [n] = influxql(influx, "SELECT count(slot_air_status) FROM rig_telemetry WHERE run='six'")
    assert n.values[0][1] >= 10  # every frame carries the new channels and their status


def test_campaign_on_six_thermocouples(tmp_path: Path, env: dict[str, str], influx: InfluxSettings) -> None:
    channels = ("chassis_air", "slot_air", "inlet_air")
    path = CampaignFile("six", file_drive(tmp_path, "16m"), runtime_s=2, equilibrium_channels=channels).write(tmp_path)
    r = thermrig(*run_args(path, tmp_path / "runs"), env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [manifest] = manifests(tmp_path / "runs").values()
    assert manifest["status"] == "ok" and manifest["equilibrium"]["reached"]
    assert set(manifest["equilibrium"]["rates_c_per_min"]) == {"chassis_air", "slot_air", "inlet_air"}
    [s] = influxql(influx, "SELECT count(slot_air_c), count(inlet_air_c) FROM rig_telemetry WHERE campaign='six'")
    assert s.values[0][1] > 0 and s.values[0][1] == s.values[0][2]

    # The same campaign on the default rig, which has no slot_air: refused before anything runs.
    default = {**env, "THERMRIG_RIGSIM": str(find_tool("rigsim"))}
    r = thermrig(*run_args(path, tmp_path / "runs4"), env=default)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "the rig has no channel slot_air, inlet_air: its channels are drive_ctrl," in r.stdout + r.stderr
