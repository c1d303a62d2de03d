"""Results that do not move with the host: the recorded campaign (tests/python/recorded_campaign.py: a
virtual 950 Pro, 2 slots x 2 loaded profiles, 45 s writes) and the calibration pipeline's quick cells
(`thermrig calibrate check --quick`: two Puget cells, 120 s writes), run quiet and then with two CPU-bound
processes beside them, each run's start (the recorded campaign's: the drive controller's baseline),
onset, depth, the onset's cause, its host stalls and the simulated world's worst lag printed, then the
two side by side with the differences against the bounds results keep (onset +-1 s, depth +-1.5 pp).
About 10 min quiet, longer loaded. One of the two alone, written as JSON for a later comparison:

    .venv/bin/python bench/bench_load_invariance.py --quiet --json quiet.json
    .venv/bin/python bench/bench_load_invariance.py --loaded --json loaded.json
    .venv/bin/python bench/bench_load_invariance.py --compare quiet.json loaded.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "python"))  # recorded_campaign

from recorded_campaign import NAME, record  # noqa: E402

from thermrig.analysis.throttle_table import ThrottleRow, throttle_table  # noqa: E402
from thermrig.db.local_server import LocalInflux  # noqa: E402

ONSET_S = 1.0  # the bounds results must keep between quiet and loaded
DEPTH_PP = 1.5
LOAD_PROCESSES = 2


@contextlib.contextmanager
def cpu_load(n: int) -> Iterator[list[int]]:
    """n CPU-bound processes (`yes` into /dev/null) for as long as the block runs; stopped by their pids."""
    procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(n)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()


def _row(campaign: str, r: ThrottleRow, start_c: float | None = None) -> dict:
    return {
        "campaign": campaign,
        "cell": f"{r.slot} / {r.profile}",
        "start_c": start_c,
        "onset_s": r.onset_s,
        "depth_pct": r.depth_pct,
        "onset_cause": r.onset_cause,
        "host_stalls": list(r.host_stalls),
        "lag_ms": r.lag_ms,
    }


def recorded(folder: Path) -> list[dict]:
    server = LocalInflux(folder / "influxdb")
    server.up()
    try:
        rec = record(folder, server)
        starts = {}  # where each run's workload started: its baseline, from its manifest
        for manifest in rec.folder.glob("*/manifest.json"):
            m = json.loads(manifest.read_text())
            starts[m["run"]] = m.get("baseline_drive_ctrl_c")
        return [_row("recorded", r, starts.get(r.run)) for r in throttle_table(rec.settings, NAME)]
    finally:
        server.down()


def calibration(folder: Path) -> list[dict]:
    out = folder / "calibration"
    cmd = [sys.executable, "-m", "thermrig.cli", "calibrate", "check", "--quick", "--jobs", "2", "--out", str(out)]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    report = json.loads((out / "report.json").read_text())
    rows = []
    for campaign, runs in report.get("runs", {}).items():
        for r in runs:
            r["host_stalls"] = tuple(r["host_stalls"])
            rows.append(_row(campaign, ThrottleRow(**r)))
    return rows


def show(rows: list[dict]) -> None:
    print(
        f"  {'campaign':<20} {'cell':<34} {'start C':>8} {'onset s':>8} {'depth %':>8} {'cause':<8} {'lag ms':>7}"
        "  host stalls (s)"
    )
    for r in rows:
        onset = "none" if r["onset_s"] is None else f"{r['onset_s']:.0f}"
        depth = "-" if r["depth_pct"] is None else f"{r['depth_pct']:.1f}"
        lag = "-" if r["lag_ms"] is None else f"{r['lag_ms']:.0f}"
        stalls = ", ".join(map(str, r["host_stalls"])) or "none"
        cause = r["onset_cause"] or "-"
        start = "-" if r.get("start_c") is None else f"{r['start_c']:.2f}"
        print(f"  {r['campaign']:<20} {r['cell']:<34} {start:>8} {onset:>8} {depth:>8} {cause:<8} {lag:>7}  {stalls}")
    stalls = sum(len(r["host_stalls"]) for r in rows)
    lags = [r["lag_ms"] for r in rows if r["lag_ms"] is not None]
    print(f"  host-attributed stalls: {stalls}; worst lag: {max(lags):.0f} ms" if lags else f"  host stalls: {stalls}")


def compare(quiet: list[dict], loaded: list[dict]) -> bool:
    key = {(r["campaign"], r["cell"]): r for r in loaded}
    ok = True
    print(f"  {'campaign':<20} {'cell':<34} {'onset quiet/loaded':>20} {'depth quiet/loaded':>20}  within")
    for q in quiet:
        lo = key.get((q["campaign"], q["cell"]))
        if lo is None:
            print(f"  {q['campaign']:<20} {q['cell']:<34} not in the loaded run")
            ok = False
            continue
        same_onset = (q["onset_s"] is None) == (lo["onset_s"] is None) and (
            q["onset_s"] is None or abs(q["onset_s"] - lo["onset_s"]) <= ONSET_S
        )
        same_depth = abs((q["depth_pct"] or 0.0) - (lo["depth_pct"] or 0.0)) <= DEPTH_PP
        ok = ok and same_onset and same_depth
        onsets = f"{q['onset_s']} / {lo['onset_s']}"
        depths = f"{q['depth_pct'] or 0:.1f} / {lo['depth_pct'] or 0:.1f}"
        verdict = "yes" if same_onset and same_depth else "NO"
        print(f"  {q['campaign']:<20} {q['cell']:<34} {onsets:>20} {depths:>20}  {verdict}")
    return ok


def measure(loaded: bool, only: str | None, keep: Path | None) -> dict:
    """One pass, quiet or loaded: its rows, printed, with its wall time."""
    rows: list[dict] = []
    start = time.monotonic()
    with (
        contextlib.nullcontext(str(keep))
        if keep
        else tempfile.TemporaryDirectory(prefix="thermrig-bench-load-", dir="/var/tmp") as tmp,
        cpu_load(LOAD_PROCESSES if loaded else 0),
    ):
        load_before = os.getloadavg()[0]
        if only in (None, "recorded"):
            rows += recorded(Path(tmp) / "recorded")
        if only in (None, "calibration"):
            rows += calibration(Path(tmp))
        load_after = os.getloadavg()[0]
    wall = time.monotonic() - start
    print(
        f"load invariance: {'loaded' if loaded else 'quiet'}, {wall / 60:.1f} min, "
        f"load average {load_before:.1f} -> {load_after:.1f}",
        flush=True,
    )
    show(rows)
    return {"loaded": loaded, "wall_s": wall, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quiet", action="store_true", help="only the quiet pass")
    mode.add_argument("--loaded", action="store_true", help=f"only the pass with {LOAD_PROCESSES} CPU-bound processes")
    mode.add_argument("--compare", nargs=2, type=Path, metavar=("QUIET", "LOADED"), help="compare two --json files")
    ap.add_argument("--only", choices=("recorded", "calibration"), help="one of the two (default: both)")
    ap.add_argument("--json", type=Path, help="with --quiet or --loaded: write the rows here (for --compare)")
    ap.add_argument("--keep", type=Path, help="with --quiet or --loaded: record into this folder and keep it")
    args = ap.parse_args()
    if args.compare:
        missing = [str(p) for p in args.compare if not p.is_file()]
        if missing:
            ap.error(f"no such file: {', '.join(missing)} (write it with --json first)")
        quiet, loaded = (json.loads(p.read_text()) for p in args.compare)
        return 0 if compare(quiet["rows"], loaded["rows"]) else 1
    if args.quiet or args.loaded:
        measured = measure(args.loaded, args.only, args.keep)
        if args.json:
            args.json.write_text(json.dumps(measured, indent=2))
        return 0
    if args.json or args.keep:
        ap.error("--json and --keep go with --quiet or --loaded")
    quiet, loaded = measure(False, args.only, None), measure(True, args.only, None)
    print("quiet against loaded:")
    compare(quiet["rows"], loaded["rows"])  # a difference is a figure to read, not a failed benchmark
    return 0


if __name__ == "__main__":
    sys.exit(main())
