"""Turn the errors a user can cause or meet into one clear line and exit status 1, no traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from thermrig.campaign.spec import CampaignError
from thermrig.config import ConfigError
from thermrig.db.local_server import InfluxServerError
from thermrig.db.query import QueryError
from thermrig.db.schema import SchemaError
from thermrig.flash.base import FlashError
from thermrig.link.rig_link import NakError, RigTimeout
from thermrig.link.transport import PortError
from thermrig.plant.profiles import ProfileError
from thermrig.plant.simulated_rig import SimError
from thermrig.protocol.messages import ProtocolError

USER_ERRORS = (
    CampaignError,
    ConfigError,
    PortError,
    RigTimeout,
    NakError,
    ProtocolError,
    ProfileError,
    SimError,
    InfluxServerError,
    QueryError,
    SchemaError,
    FlashError,
)
P = ParamSpec("P")
R = TypeVar("R")


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as exc:
            # The message is text, not markup ("[factors] slot: ..."), and one line: no wrapping.
            Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(1) from exc

    return wrapper
