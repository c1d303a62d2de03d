"""The one way commands show a duration (thermrig plan, thermrig lab plan)."""

from __future__ import annotations

from thermrig.cli.durations import hms


def test_hours_minutes_and_seconds_the_hours_only_when_there_are_any() -> None:
    assert hms(15 * 3600 + 5 * 60) == "15h05m00s"
    assert hms(5 * 60 + 3) == "5m03s"
    assert hms(0) == "0m00s"
    assert hms(3599.6) == "1h00m00s"  # rounded, then carried
