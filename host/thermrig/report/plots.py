"""The report's figures (matplotlib, Agg: no display needed), each saved as a PNG: throughput and
temperatures against time per run overlaid by factor, throughput against controller temperature, the
sensor ranking, consistency and steady state, mixed-sweep curves.

Time axes are in rig time: the rig's own clock (its uptime), so a simulated run whose phases between
workloads ran accelerated reads as long as a real run would (fio's seconds are rig seconds already: the
workload runs at 1x)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from thermrig.analysis.run_data import CONTROLLER, RunData
from thermrig.analysis.summary_store import CampaignAnalysis
from thermrig.analysis.throttle_summary import job_series, measured_job

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

STYLES = ("-", "--", ":", "-.")
MAX_POINTS = 1200  # per line: an hour-long run drawn at every third second looks the same and draws fast


@cache
def _pyplot() -> ModuleType:
    """matplotlib's pyplot on its file-only backend, imported when a report first draws: a second of
    import that no other command pays."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot: files only, never a window
    import matplotlib.pyplot

    return matplotlib.pyplot


def _thin(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    step = max(1, -(-len(arrays[0]) // MAX_POINTS))
    return tuple(np.asarray(a)[::step] for a in arrays)


def _label(data: RunData) -> str:
    keys = ("slot", "heatsink", "profile", "hctm")
    return " / ".join(("hctm " if k == "hctm" else "") + data.tags[k] for k in keys if data.tags.get(k)) or data.run


def _styles(a: CampaignAnalysis) -> dict[str, tuple[str, str]]:
    """Colour by chassis condition (profile), line style by slot: runs of one factor level look alike."""
    colours = _pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    profiles = sorted({d.tags.get("profile", "") for d, _ in a.runs})
    slots = sorted({d.tags.get("slot", "") for d, _ in a.runs})
    return {
        d.run: (
            colours[profiles.index(d.tags.get("profile", "")) % len(colours)],
            STYLES[slots.index(d.tags.get("slot", "")) % len(STYLES)],
        )
        for d, _ in a.runs
    }


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    _pyplot().close(fig)
    return path


def _finish(fig: Figure, ax: Axes, drawn: bool, path: Path, grid: bool = True, **labels: str) -> Path | None:
    """Label, legend and save an overlay of runs, or None (no file) when no run had anything to draw."""
    if not drawn:
        _pyplot().close(fig)
        return None
    ax.set(**labels)
    ax.legend(fontsize=8)
    if grid:
        ax.grid(alpha=0.3)
    return _save(fig, path)


def _per_second(a: CampaignAnalysis, path: Path, height: float, iops: bool, onsets: bool, **labels: str) -> Path | None:
    """Every run's measured job, a value a second from the job's start, overlaid: MB/s (or IOPS) at the
    drive's scale; onsets: a faint line at each run's onset. A run needs one second (two for IOPS)."""
    styles = _styles(a)
    fig, ax = _pyplot().subplots(figsize=(9, height))
    drawn = False
    for data, s in a.runs:
        _, series = job_series(measured_job(data.jobs), iops=iops)
        if len(series) < (2 if iops else 1):
            continue
        colour, style = styles[data.run]
        values = np.asarray(series) / data.scale
        t, y = _thin(np.arange(1, len(series) + 1), values if iops else values / 1e6)
        ax.plot(t, y, style, color=colour, label=_label(data))
        if onsets and s.throttle.onset_s is not None:
            ax.axvline(s.throttle.onset_s, color=colour, alpha=0.3, linewidth=1)
        drawn = True
    return _finish(fig, ax, drawn, path, xlabel="seconds from the job's start", **labels)


def throughput_time(a: CampaignAnalysis, path: Path) -> Path | None:
    labels = {"ylabel": "MB/s (drive scale)", "title": "Throughput per run"}
    return _per_second(a, path, 4.5, iops=False, onsets=True, **labels)


def temperatures_time(a: CampaignAnalysis, path: Path, sensor: str = CONTROLLER) -> Path | None:
    styles = _styles(a)
    fig, ax = _pyplot().subplots(figsize=(9, 4.5))
    drawn = False
    for data, s in a.runs:
        trace = data.temps.get(sensor)
        start = s.throttle.start_ms
        if trace is None or start is None:
            continue
        colour, style = styles[data.run]
        t, y = _thin(rig_seconds(data, trace.t_ms, start), trace.values)
        ax.plot(t, y, style, color=colour, label=_label(data))
        drawn = True
    ax.axvline(0, color="grey", linewidth=1)
    name = sensor.split(".", 1)[1].removesuffix("_c")
    xlabel = "seconds from the job's start, rig time (the rig's clock)"
    return _finish(fig, ax, drawn, path, xlabel=xlabel, ylabel="°C", title=f"{name} per run")


def rig_seconds(data: RunData, t_ms: np.ndarray, origin_ms: float) -> np.ndarray:
    """Recorded times as seconds of the rig's own clock from origin_ms (recorded time where the run has
    no uptime recorded)."""
    rig = data.rig_ms(np.append(np.asarray(t_ms, dtype=float), origin_ms))
    if rig is None:
        return (np.asarray(t_ms) - origin_ms) / 1000.0
    return (rig[:-1] - rig[-1]) / 1000.0


def throughput_vs_controller(a: CampaignAnalysis, path: Path) -> Path | None:
    styles = _styles(a)
    fig, ax = _pyplot().subplots(figsize=(7, 4.5))
    drawn = False
    for data, _ in a.runs:
        start, series = job_series(measured_job(data.jobs))
        trace = data.temps.get(CONTROLLER)
        if start is None or trace is None or not series:
            continue
        mids = start + 1000.0 * np.arange(len(series)) + 500.0
        inside = (mids >= trace.t_ms[0]) & (mids <= trace.t_ms[-1])  # never extrapolated
        xs = np.interp(mids[inside], trace.t_ms, trace.values)
        ys = np.asarray(series)[inside] / data.scale / 1e6
        xs, ys = _thin(xs, ys)
        ax.scatter(xs, ys, s=8, color=styles[data.run][0], label=_label(data))
        drawn = True
    labels = {"xlabel": "controller thermocouple °C", "ylabel": "MB/s (drive scale)"}
    return _finish(fig, ax, drawn, path, title="Throughput against controller", **labels)


def ranking(a: CampaignAnalysis, path: Path) -> Path | None:
    if not a.ranking:
        return None
    fig, ax = _pyplot().subplots(figsize=(7, 0.5 * len(a.ranking) + 1.5))
    labels = [r.label for r in a.ranking][::-1]
    spreads = [r.spread_c for r in a.ranking][::-1]
    colours = ["tab:green" if r.follows else "tab:grey" for r in a.ranking][::-1]
    ax.barh(labels, spreads, color=colours)
    ax.set(xlabel="spread of the temperature at onset, °C (grey: does not follow the drive)")
    ax.set_title("Which sensor predicts throttling (best at the top)")
    return _save(fig, path)


def consistency(a: CampaignAnalysis, path: Path) -> Path | None:
    """IOPS per second of every run's measured job: the consistency figure (seeds 003/004)."""
    labels = {"ylabel": "IOPS (drive scale)", "title": "Consistency: IOPS per second"}
    return _per_second(a, path, 4, iops=True, onsets=False, **labels)


def steady_state(a: CampaignAnalysis, path: Path) -> Path | None:
    """SNIA rounds: each round's mean IOPS (a round is a job of the workload, in order)."""
    fig, ax = _pyplot().subplots(figsize=(7, 4))
    drawn = False
    for data, _ in a.runs:
        if "rounds" not in data.stored:
            continue
        positions = sorted({log.position for log in data.jobs})
        means = []
        for p in positions:
            _, iops = job_series([log for log in data.jobs if log.position == p], iops=True)
            means.append(float(np.mean(iops)) / data.scale if iops else 0.0)
        ax.plot(positions, means, "o-", label=_label(data))
        drawn = True
    return _finish(
        fig, ax, drawn, path, grid=False, xlabel="round", ylabel="mean IOPS (drive scale)", title="SNIA PTS rounds"
    )


def sweeps(a: CampaignAnalysis, path: Path) -> Path | None:
    fig, ax = _pyplot().subplots(figsize=(7, 4))
    drawn = False
    for data, s in a.runs:
        if not s.sweep:
            continue
        ax.plot(
            [p.read_share_pct for p in s.sweep], [p.throughput_bps / 1e6 for p in s.sweep], "o-", label=_label(data)
        )
        drawn = True
    labels = {"xlabel": "read share, %", "ylabel": "MB/s (drive scale)"}
    return _finish(fig, ax, drawn, path, grid=False, title="Mixed sweep: throughput against read share", **labels)


FIGURES = {
    "throughput.png": ("Throughput against time, per run", throughput_time),
    "controller.png": ("Controller thermocouple against time, per run", temperatures_time),
    "throughput_vs_controller.png": ("Throughput against controller temperature", throughput_vs_controller),
    "sensor_ranking.png": ("Sensor ranking", ranking),
    "consistency.png": ("Consistency", consistency),
    "steady_state.png": ("SNIA steady state", steady_state),
    "sweeps.png": ("Mixed sweeps", sweeps),
}
