"""The C core's calls go one way (docs/firmware.md, "Inside the core"): each file of firmware/core is
compiled on its own and its object's undefined symbols are matched to the objects that define them;
the resulting graph between files must have no cycle (rig.c calls rig_cmd.c, never the reverse)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "firmware" / "core"


def symbols(obj: Path, *flags: str) -> set[str]:
    out = subprocess.run(["nm", "--format=just-symbols", *flags, str(obj)], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


def call_graph(build: Path) -> dict[str, set[str]]:
    """Core file -> the core files whose functions or data it uses."""
    defined: dict[str, str] = {}
    undefined: dict[str, set[str]] = {}
    for src in sorted(CORE.glob("*.c")):
        obj = build / f"{src.stem}.o"
        flags = ["-std=c11", "-c", "-Wall", "-Wextra", "-Werror", '-DRIG_BOARD="test"', f"-I{CORE}"]
        subprocess.run(["gcc", *flags, str(src), "-o", str(obj)], check=True)
        for name in symbols(obj, "--defined-only", "--extern-only"):
            defined[name] = src.name
        undefined[src.name] = symbols(obj, "--undefined-only")
    return {f: {defined[s] for s in used if s in defined and defined[s] != f} for f, used in undefined.items()}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a path, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt] if nxt in path else [*path, nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])) is not None:
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])) is not None:
            return found
    return None


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    if shutil.which("gcc") is None or shutil.which("nm") is None:
        pytest.fail("gcc and nm are needed: scripts/setup_system.sh installs them")
    return call_graph(tmp_path_factory.mktemp("core"))


def test_the_cycle_finder_finds_one() -> None:
    assert cycle({"a.c": {"b.c"}, "b.c": {"c.c"}, "c.c": {"a.c"}}) == ["a.c", "b.c", "c.c", "a.c"]
    assert cycle({"a.c": {"b.c"}, "b.c": set()}) is None


def test_the_core_calls_one_way(graph: dict[str, set[str]]) -> None:
    assert graph["rig.c"] >= {"rig_cmd.c", "rig_safe.c", "safety.c", "frame.c"}  # the graph is read
    assert cycle(graph) is None, f"call cycle between core files: {' -> '.join(cycle(graph) or [])}"


def test_commands_do_not_call_back_into_the_rig_step(graph: dict[str, set[str]]) -> None:
    assert "rig.c" not in graph["rig_cmd.c"]
    assert "rig.c" not in graph["rig_wires.c"]  # the codec needs the types and the safe state only
