"""Summaries completed late, and said when incomplete. A run whose points reached InfluxDB after it
ended has an incomplete summary (complete=false) until it is analysed: `thermrig analyze` (and `db
drain`, once it has sent the points) writes its full summary and its campaign's results again, and says
so; the commands that only read (`throttle`, `report`, `query`, `db status`) write nothing and name the
runs whose summary is incomplete."""

from __future__ import annotations

from rich.console import Console

from thermrig.campaign.summaries import awaiting_analysis, complete_late
from thermrig.db.influx_settings import InfluxSettings


def complete_summaries(settings: InfluxSettings, console: Console, campaign: str | None = None) -> list[str]:
    """The runs completed now, said in one line; those still unreadable, with the query's error, in another."""
    done = complete_late(settings, campaign)
    if done.runs:
        console.print(
            f"wrote the full summaries of {', '.join(done.runs)} (their points reached InfluxDB after the run "
            "ended, or the server could not be read then) and their campaign's results again",
            markup=False,
            soft_wrap=True,
        )
    if done.failed:
        console.print(
            f"summaries of {', '.join(done.failed)} still cannot be read back from InfluxDB: {done.error}; "
            "`thermrig db check` says what to fix",
            markup=False,
            soft_wrap=True,
        )
    return done.runs


def say_incomplete(console: Console, campaign: str | None = None) -> list[str]:
    """The ended runs whose summary is incomplete, in one line, and what completes them; nothing written."""
    late = awaiting_analysis(campaign)
    ready = [w.run for w in late if not w.spooled]  # points all in: `analyze` completes them now
    spooled = [w.run for w in late if w.spooled]
    if ready:
        console.print(
            f"summary incomplete (complete=false) for {', '.join(ready)}: their points are all in InfluxDB; "
            f"`thermrig analyze {campaign or 'CAMPAIGN'}` completes them",
            markup=False,
            soft_wrap=True,
        )
    if spooled:
        console.print(
            f"summary incomplete (complete=false) for {', '.join(spooled)} until their points are all in "
            "InfluxDB: `thermrig db drain` sends them and completes them",
            markup=False,
            soft_wrap=True,
        )
    return ready + spooled
