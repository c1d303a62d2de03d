"""Turn the errors a user can cause or meet into one clear line and exit status 1, no traceback: every
such error derives from thermrig.errors.ThermrigError, so this module needs to know none of them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from thermrig.errors import ThermrigError

P = ParamSpec("P")
R = TypeVar("R")


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ThermrigError as exc:
            # The message is text, not markup ("[factors] slot: ..."), and one line: no wrapping.
            Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(1) from exc

    return wrapper
