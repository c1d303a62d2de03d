"""Published vs measured, per cell: the rows `thermrig calibrate` prints, from the replay or from the
pipeline's InfluxDB tables."""

from __future__ import annotations

from thermrig.analysis.published import (
    HEATSINK_CONDITION,
    HEATSINK_RATIO_BAND,
    HEATSINK_RUNTIME_S,
    PUGET,
    SM951_IOPS_BARE,
    SM951_IOPS_REL,
    SM951_IOPS_SINK,
    SM951_PEAK_BAND_S,
    SM951_PEAK_S,
)
from thermrig.analysis.throttle import throttle_of
from thermrig.analysis.throttle_table import ThrottleRow
from thermrig.calibration.check import CalibrationCheck
from thermrig.calibration.fit import SEQ_WRITE, evaluate, sm951_replay
from thermrig.calibration.mixed import mixed_and_consistency_checks
from thermrig.calibration.parameters import current
from thermrig.dut.replay import ModelReplay, Workload, condition
from thermrig.hardware.drive_profiles import load_drive_profile
from thermrig.hardware.profiles import load_chassis, load_drive_thermal, load_slot


def _fmt(value: float | None, unit: str = "") -> str:
    return "none" if value is None else f"{value:,.0f}{unit}"


def puget_checks(rows: list[ThrottleRow]) -> list[CalibrationCheck]:
    out = []
    for cell in PUGET:
        row = next((r for r in rows if r.slot == cell.slot and r.profile == cell.profile), None)
        if row is None or row.depth_pct is None:
            out.append(CalibrationCheck("001 Puget", f"{cell.slot} / {cell.profile}", cell.published, "not run", False))
            continue
        # the simulated drive's own time of the onset: a plant that fell behind on a busy machine delays it
        # in fio's seconds, not in the drive's (docs/analysis.md, "One time")
        onset = row.onset_drive_s if row.onset_drive_s is not None else row.onset_s
        onset_ok, depth_ok = cell.judge(onset, row.depth_pct)
        measured = f"{row.depth_pct:.0f}% after {_fmt(onset)} s"
        if onset is not None and row.onset_s is not None and round(onset) != round(row.onset_s):
            measured += f" (fio: {row.onset_s:.0f} s)"
        flags = ("" if onset_ok else " (onset)") + ("" if depth_ok else " (depth)")
        out.append(
            CalibrationCheck(
                "001 Puget", f"{cell.slot} / {cell.profile}", cell.published, measured + flags, onset_ok and depth_ok
            )
        )
    return out


def sustained(row: ThrottleRow) -> float | None:
    if row.plateau_bps is None or row.depth_pct is None:
        return None
    return row.plateau_bps * (1 - row.depth_pct / 100.0)


def heatsink_check(rows: list[ThrottleRow]) -> CalibrationCheck:
    by = {r.heatsink: sustained(r) for r in rows}
    bare, sink = by.get("none"), by.get("passive")
    if not bare or not sink:
        return CalibrationCheck("004 AnandTech", "950 Pro heatsink", "~2x sustained seq write", "not run", False)
    ratio = sink / bare
    lo, hi = HEATSINK_RATIO_BAND
    return CalibrationCheck(
        "004 AnandTech",
        "950 Pro heatsink",
        f"~2x sustained seq write ({lo:g}-{hi:g}x)",
        f"{ratio:.2f}x ({bare / 1e6:,.0f} -> {sink / 1e6:,.0f} MB/s)",
        lo <= ratio <= hi,
    )


def sm951_checks(peak_s: float | None, iops: dict[str, float]) -> list[CalibrationCheck]:
    lo, hi = SM951_PEAK_BAND_S
    out = [
        CalibrationCheck(
            "002 AnandTech",
            "SM951 peak seq write",
            f"~{SM951_PEAK_S:.0f} s ({lo:.0f}-{hi:.0f})",
            _fmt(peak_s, " s"),
            peak_s is not None and lo <= peak_s <= hi,
        )
    ]
    for heatsink, published in (("none", SM951_IOPS_BARE), ("passive", SM951_IOPS_SINK)):
        got = iops.get(heatsink)
        out.append(
            CalibrationCheck(
                "002 AnandTech",
                f"SM951 4KB random write, heatsink {heatsink}",
                f"{published:,.0f} IOPS (+-{SM951_IOPS_REL:.0%})",
                _fmt(got, " IOPS"),
                got is not None and abs(got - published) <= SM951_IOPS_REL * published,
            )
        )
    return out


def replay_report(replayer: ModelReplay) -> list[CalibrationCheck]:
    """Every check on the replay with the parameters the profile files hold now (seconds, no fio)."""
    chassis = load_chassis()
    fitted = current()
    rows = [
        ThrottleRow(
            "replay",
            c.slot,
            "none",
            c.profile,
            "seqwrite",
            "950pro_512",
            0,
            r.onset_s,
            r.depth_pct,
            fitted.drive.seq_write_bps,
        )
        for c, r in zip(PUGET, evaluate(replayer, chassis, fitted), strict=True)
    ]
    checks = puget_checks(rows)
    slot, profile = HEATSINK_CONDITION
    sink_rows = []
    for heatsink in ("none", "passive"):
        cond = condition(load_slot(slot), load_drive_thermal(heatsink), profile)
        th = throttle_of(replayer.replay(chassis, fitted.drive, cond, Workload(SEQ_WRITE, HEATSINK_RUNTIME_S)))
        sink_rows.append(
            ThrottleRow(
                "replay",
                slot,
                heatsink,
                profile,
                "seqwrite",
                "950pro_512",
                th.seconds,
                th.onset_s,
                th.depth_pct,
                th.plateau,
            )
        )
    checks.append(heatsink_check(sink_rows))
    peak, iops = sm951_replay(replayer, chassis, load_drive_profile("sm951_512"))
    return checks + sm951_checks(peak, iops) + mixed_and_consistency_checks(replayer, chassis, fitted.drive)
