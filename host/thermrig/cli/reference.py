"""The CLI reference (docs/cli.md), generated from the command definitions themselves: every command's
help, its arguments and options with their defaults. `python -m thermrig.cli.reference > docs/cli.md`
(`make docs`) writes it; tests/python/test_cli_reference.py fails when the page is stale."""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterator
from typing import Any

import typer

HEADER = """# Command reference

Every `thermrig` command, its arguments and options, generated from the command definitions
(`make docs` writes this page; a test fails when it is out of date). `thermrig COMMAND --help` prints
the same text. The guides ([index](index.md)) show the commands in use.
"""


def _walk(cmd: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    if _is_group(cmd):
        for name in sorted(cmd.commands):
            sub = cmd.commands[name]
            if not sub.hidden:
                yield from _walk(sub, (*path, name))


def _is_group(cmd: Any) -> bool:
    return hasattr(cmd, "commands")  # typer carries its own click: known by shape, not by class


def _kind(param: Any) -> str:
    """What an option takes: its choices, or its type's name."""
    annotation = param.type_descriptor.annotation
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "[" + "|".join(str(m.value) for m in annotation) + "]"
    return getattr(annotation, "__name__", str(annotation)).upper()


def _param_line(param: Any) -> str:
    if param.param_type_name == "argument":
        name = (param.metavar or param.name or "").upper()
        need = "" if param.required else " (optional)"
        return f"- `{name}`{need}: {getattr(param, 'help', None) or ''}".rstrip(": ")
    names = ", ".join(f"`{o}`" for o in (*param.opts, *param.secondary_opts))
    if not param.is_flag:
        names += f" {param.metavar or _kind(param)}"
    text = (param.help or "").strip()
    default = param.default
    if param.is_flag and param.secondary_opts:  # --x / --no-x: which one is the default
        shown = f" [default: {param.opts[0] if default else param.secondary_opts[0]}]"
    elif param.is_flag or default in (None, (), ""):
        shown = ""
    else:
        shown = f" [default: {default}]"
    if param.required:
        shown += " [required]"
    return f"- {names}: {text}{shown}".rstrip()


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


def markdown(app: typer.Typer, prog: str = "thermrig") -> str:
    """The reference page for app: a section per command, in the order of the command tree."""
    root = typer.main.get_command(app)
    out = [HEADER]
    for path, cmd in _walk(root, (prog,)):
        if len(path) == 1:
            continue  # the root: its commands are the sections
        title = " ".join(path)
        out.append(f"\n## `{title}`\n")
        if cmd.help:
            out.append(" ".join(cmd.help.strip().replace("\b", "").split()) + "\n")
        if _is_group(cmd):
            subs = [
                f"- [`{title} {n}`](#{'-'.join((*path, n)).replace(' ', '-')}): "
                f"{_first_paragraph(cmd.commands[n].help or '')}"
                for n in sorted(cmd.commands)
                if not cmd.commands[n].hidden
            ]
            out.append("\n".join(subs) + "\n")
        params = [p for p in cmd.params if not getattr(p, "hidden", False) and p.name != "help"]
        args = [(p.metavar or p.name or "").upper() for p in params if p.param_type_name == "argument"]
        usage = " ".join(["[OPTIONS]", *args])
        if params or not _is_group(cmd):
            out.append(f"```\n{title} {usage}\n```\n")
        if params:
            out.append("\n".join(_param_line(p) for p in params) + "\n")
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    from thermrig.cli.main import app

    sys.stdout.write(markdown(app))


if __name__ == "__main__":
    main()
