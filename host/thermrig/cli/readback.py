"""What a campaign says at its end when its runs' points are all in InfluxDB but their summaries could not be
read back: the query's own error, and the command that completes them once the server is fixed. The same
words on one rig and on a lab."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape


def say_unread(
    console: Console,
    name: str,
    ok: int,
    total: int,
    error: str,
    unanalysed: list[str],
    unsent: list[str],
    folder: Path,
) -> bool:
    """unanalysed: the runs whose summaries are incomplete; unsent: those whose points are still spooled;
    error: the read-back's own error. The others of unanalysed (their points all in InfluxDB) are said with
    the error; True (said) when there are such runs and an error to name."""
    unread = [r for r in unanalysed if r not in unsent]
    if not (unread and error):
        return False
    console.print(
        f"[red]campaign {name} finished, its summaries not read back[/]: {ok} of {total} runs ok and their "
        f"points in InfluxDB, but reading them back failed: {escape(error)}; summary incomplete "
        f"(complete=false) for {', '.join(unread)}. Fix the server (`thermrig db check` says what), then "
        f"`thermrig analyze {name}` completes them; manifests in {folder}",
        soft_wrap=True,
    )
    return True
