"""What the `thermrig lab` commands share: the coordinator option, labgrid imported on use, KEY=VALUE
options, naming a stale lock released."""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Annotated

import typer

from thermrig.lab.errors import LabError
from thermrig.lab.locks import LockRecord

CoordOpt = Annotated[
    str, typer.Option("--coordinator", "-x", envvar="LG_COORDINATOR", help="The labgrid coordinator, HOST:PORT.")
]


def labgrid_modules() -> ModuleType:
    """thermrig.lab's modules that need labgrid (the `lab` extra), imported on use. labgrid's client logs
    to the root logger: our errors say it in one line instead."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())
    try:
        import thermrig.lab.acquired
        import thermrig.lab.status
    except ImportError as exc:
        raise LabError(f"labgrid is not installed ({exc.name}): pip install 'thermrig[lab]'") from exc
    return thermrig.lab


def pairs(pairs: list[str], option: str, example: str) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not value:
            raise typer.BadParameter(f"{pair!r}: use KEY=VALUE, e.g. {example}", param_hint=option)
        out[key] = value
    return out


def named_stale(record: LockRecord) -> None:
    typer.echo(f"released stale lock on place {record.place} (left by pid {record.pid}, {record.purpose})", err=True)
