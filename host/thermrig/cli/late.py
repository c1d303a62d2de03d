"""Summaries completed late: before a command reads or sends a campaign's data, the runs whose points
reached InfluxDB after their run ended get their full summary, and their campaign its results again."""

from __future__ import annotations

from rich.console import Console

from thermrig.campaign.summaries import complete_late
from thermrig.db.settings import InfluxSettings


def complete_summaries(settings: InfluxSettings, console: Console, campaign: str | None = None) -> list[str]:
    """The runs completed now, said in one line."""
    done = complete_late(settings, campaign)
    if done:
        console.print(
            f"summaries completed for {', '.join(done)} (their points reached InfluxDB after the run ended); "
            "campaign results rewritten",
            markup=False,
            soft_wrap=True,
        )
    return done
