"""A campaign and the drive's own thermal management: each run records the drive's thermal configuration
(nvme id-ctrl's WCTEMP, CCTEMP, HCTMA, MNTMT, MXTMT, power states, and the current HCTM value) in its
manifest and in InfluxDB (`drive_thermal`), and a campaign's `hctm` factor sets the run's TMT1/TMT2
(checked against the drive before the first run), the drive's own value restored after the run, whatever
ends it (Ctrl-C included). A drive that lacks a field is recorded without it; one whose thermal
management cannot be read (not NVMe, an NBD export, nvme-cli refused) records nothing, never an error."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

from thermrig.campaign.spec import Campaign, CampaignError
from thermrig.db.schema import RunTags, drive_thermal_line
from thermrig.drive.thermal_config import HctmLevel, ThermalConfigError, hctm_applied, read_thermal_config
from thermrig.dut.drive import DriveUnderTest
from thermrig.toml_file import TomlFile


def _refuse(campaign: Campaign, problem: str, expected: str) -> CampaignError:
    """At the hctm factor's line of the campaign file, as the file's own checks say it."""
    with contextlib.suppress(CampaignError):
        return TomlFile.read(campaign.path, CampaignError).fail("factors", "hctm", problem, expected)  # type: ignore[return-value]
    return CampaignError(f"{campaign.path}: [factors] hctm: {problem}; expected {expected}")


def check_hctm_levels(campaign: Campaign, drive: DriveUnderTest) -> None:
    """Before the first run: every level of the hctm factor is one the drive takes (it supports HCTM,
    the thresholds within its MNTMT..MXTMT); nothing is set here."""
    levels = [HctmLevel.parse(x) for x in campaign.factors.get("hctm", ())]
    if not levels:
        return
    thermal = drive.thermal()
    if thermal is None:
        if all(level.off for level in levels):
            return
        raise _refuse(campaign, f"{drive.name} has no NVMe thermal management to set", 'an NVMe drive, or "off" only')
    try:
        config = read_thermal_config(thermal)
    except (ThermalConfigError, subprocess.TimeoutExpired) as exc:
        problem = f"cannot read {drive.name}'s thermal configuration: {exc}"
        raise _refuse(campaign, problem, "a drive whose id-ctrl can be read") from exc
    for level in levels:
        try:
            level.check(config, drive.name)
        except ThermalConfigError as exc:
            raise _refuse(campaign, f"{level.label!r}: {exc}", "levels the drive accepts") from exc


def _read(drive: DriveUnderTest) -> dict[str, Any]:
    thermal = drive.thermal()
    if thermal is None:
        return {}
    try:
        return dict(read_thermal_config(thermal).fields())
    except (ThermalConfigError, subprocess.TimeoutExpired):
        return {}  # a drive whose configuration cannot be read is recorded without it


@contextlib.contextmanager
def run_thermal(
    drive: DriveUnderTest, level: HctmLevel | None, record: Callable[[list[str]], None], tags: RunTags
) -> Iterator[dict[str, Any]]:
    """For one run: the run's HCTM level set (None: HCTM left as the drive has it), the drive's thermal
    configuration as the run sees it recorded (its InfluxDB point to `record`, the run's Recorder.append;
    the caller's manifest from what this yields), and the drive's own HCTM value back afterwards, whatever
    ends the run; once it is back, a second point says so (`hctm_value` as read then, `hctm_restored`)."""
    stack = contextlib.ExitStack()
    with stack:
        thermal = None if level is None else drive.thermal()
        if level is None:
            fields = _read(drive)
        elif thermal is None:  # "off" on a drive without thermal management
            fields = {}
        else:
            config = stack.enter_context(hctm_applied(thermal, level.tmt1_c, level.tmt2_c, drive.name))
            fields = dict(config.fields())
        if level is not None:
            fields["hctm_level"] = level.label
        if fields:
            record([drive_thermal_line(fields, time.time_ns(), tags)])
        try:
            yield fields
        finally:
            stack.close()  # the drive's own value back
            if "hctm_value" in fields and level is not None and thermal is not None:
                with contextlib.suppress(ThermalConfigError, subprocess.TimeoutExpired):
                    restored = {"hctm_value": thermal.hctm(), "hctm_restored": True}
                    record([drive_thermal_line(restored, time.time_ns(), tags)])
