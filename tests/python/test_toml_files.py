"""One typed reader for every TOML file: errors at file:line with the section and key, and one parser of
chassis profiles, whether they come from the hardware file or from a campaign's [profiles.NAME]."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_campaign_files import GOOD, write

from thermrig.campaign.spec import CampaignError, load_campaign
from thermrig.config import ConfigError, resolve_port
from thermrig.db.influx_settings import configured
from thermrig.dut.replay import condition
from thermrig.errors import ThermrigError
from thermrig.hardware.chassis_profiles import load_profile
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.hardware.profiles import ProfileError, load_drive_thermal, load_slot


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if line.startswith(text))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_profile_errors_give_the_line_of_the_key(hardware_copy: Path) -> None:
    edit(hardware_copy / "drives.toml", "tmt1_c = ", "tmt1_c = true #")
    with pytest.raises(ProfileError) as err:
        load_drive_profile("950pro_512")
    line = line_of(hardware_copy / "drives.toml", "tmt1_c = true")
    assert str(err.value).startswith(f"{hardware_copy / 'drives.toml'}:{line}: [950pro_512] tmt1_c = True")
    edit(hardware_copy / "slots.toml", "v_slot_fan = ", "v_slot_fans = ")
    with pytest.raises(ProfileError, match=r"slots.toml:\d+: \[top\] lacks v_slot_fan"):
        load_slot("top")


def test_one_chassis_profile_parser_with_one_set_of_defaults(hardware_copy: Path, tmp_path: Path) -> None:
    path = hardware_copy / "chassis_profiles.toml"
    text = path.read_text()
    start = text.index("[single_gpu_load]")
    end = text.index("\n\n", start)
    own_block = '[single_gpu_load]\ndescription = "edited"\nair_c = 36.6\nfan1_pct = 25'  # fan0 left to its default
    path.write_text(text[:start] + own_block + text[end:])
    hw = load_profile("single_gpu_load")
    assert (hw.fan0_pct, hw.fan1_pct) == (40.0, 25.0)
    cond = condition(load_slot("top"), load_drive_thermal("none"), "single_gpu_load")
    assert (cond.fan0, cond.fan1, cond.air_c) == (0.4, 0.25, hw.air_c)  # the replay reads the same profile
    own = GOOD.replace('profile = ["single_gpu_load", "dual_gpu_load"]', 'profile = ["mine"]')
    own += "\n[profiles.mine]\nair_c = 30.0\nfan1_pct = 25\n"
    c = load_campaign(write(tmp_path, own))
    mine = c.profiles["mine"]
    assert (mine.fan0_pct, mine.fan1_pct, mine.heater_limit_pct) == (hw.fan0_pct, 25.0, 100.0)
    edit(path, "fan1_pct = 25", "fan1_pct = 25\nfan0_pct = 140")
    with pytest.raises(ProfileError) as err:
        load_profile("single_gpu_load")
    line = line_of(path, "fan0_pct = 140")
    assert f"chassis_profiles.toml:{line}: [single_gpu_load] fan0_pct: 140.0; expected a percentage" in str(err.value)


def test_a_heated_profile_needs_its_air_target(tmp_path: Path) -> None:
    own = GOOD.replace('profile = ["single_gpu_load", "dual_gpu_load"]', 'profile = ["mine"]')
    own += "\n[profiles.mine]\nfan0_pct = 50\n"
    with pytest.raises(CampaignError, match=r"c.toml:\d+: \[profiles.mine\]: air_c is missing"):
        load_campaign(write(tmp_path, own))


def test_file_errors_share_one_base_the_cli_catches() -> None:
    assert issubclass(CampaignError, ThermrigError) and issubclass(ProfileError, ThermrigError)


def test_the_users_config_file_is_read_the_same_way(isolated_env: dict[str, str]) -> None:
    cfg = Path(isolated_env["XDG_CONFIG_HOME"]) / "thermrig" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('[influx]\nurl = "http://127.0.0.1:8086"\ntoken = 5\n')
    with pytest.raises(ConfigError, match=r"config.toml:3: \[influx\] token: 5 is a int; expected a string"):
        configured()
    cfg.write_text("[rig]\n\nport = 3\n")
    with pytest.raises(ConfigError, match=r"config.toml:3: \[rig\] port: 3 is a int; expected a string"):
        resolve_port(None)
    cfg.write_text("[rig\n")
    with pytest.raises(ConfigError, match=r"config.toml: not valid TOML"):
        resolve_port(None)
