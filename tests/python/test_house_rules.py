"""What a user's clone must stand on by itself: docs that need nothing outside the repository, code and
docs that speak of the product rather than of how it was worked on, and a bench/ that holds only the
benchmarks `make bench` runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve()
TEXT_SUFFIXES = {".md", ".py", ".c", ".h", ".toml", ".txt", ".ini", ".cfg", ".yaml", ".yml", ".sh", ".cmake"}
TEXT_NAMES = {"Makefile", "CMakeLists.txt", "Kconfig", "prj.conf"}
SKIP_PARTS = {".venv", "build", "__pycache__", ".pytest_cache", "node_modules", ".ruff_cache"}

# The project's own tracker and the way work on it was organised are not the reader's: an issue number
# ("issue 12", "(#12)", "see #12") or a word about sessions and their notes means nothing in a clone.
# An upstream project's issue is named by its address (…/issues/1386), which these do not match.
WORKSHOP_WORDS = re.compile(
    r"\bissues?\s+#?\d+"
    r"|\((?:see\s+)?#\d+\)"
    r"|\b(?:see|fixes|fixed\s+by|closes|closed\s+by|PR|pull\s+request)\s+#\d+"
    r"|\bsession\s+notes?\b|\bthis\s+session\b|\bother\s+sessions\b|\bthe\s+notes\b|\bnotes/",
    re.IGNORECASE,
)
# A folder beside the repository that a clone does not have.
OUTSIDE = re.compile(r"(?<![\w-])(?:\.\./)*shared/")


def _files(*tops: str) -> list[Path]:
    found = []
    for top in tops:
        path = ROOT / top
        candidates = [path] if path.is_file() else path.rglob("*")
        for p in candidates:
            if not p.is_file() or SKIP_PARTS & set(p.relative_to(ROOT).parts) or p == HERE:
                continue
            if p.suffix in TEXT_SUFFIXES or p.name in TEXT_NAMES:
                found.append(p)
    return sorted(found)


def _hits(pattern: re.Pattern[str], files: list[Path]) -> list[str]:
    hits = []
    for p in files:
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            m = pattern.search(line)
            if m:
                hits.append(f"{p.relative_to(ROOT)}:{n}: {m.group(0)!r}")
    return hits


def test_the_scanned_tree_is_the_products() -> None:
    # the scan below must read the tree, not an empty list: docs, code and tests of every kind are in it
    files = {p.relative_to(ROOT).as_posix() for p in _files("docs", "README.md", "host", "firmware", "tests")}
    assert {"README.md", "docs/architecture.md", "tests/python/conftest.py"} <= files
    assert any(f.startswith("firmware/core/") and f.endswith(".c") for f in files)


def test_no_issue_numbers_or_session_words_in_code_comments_or_docs() -> None:
    files = _files("docs", "README.md", "host", "firmware", "tests", "bench", "scripts", "Makefile")
    assert _hits(WORKSHOP_WORDS, files) == []


def test_the_workshop_pattern_catches_what_it_is_for() -> None:
    caught = ["as issue 20 found them", "(#12)", "see #7", "in the session notes", "from other sessions"]
    passed = ["a recording session", "chip select #0", "pytest-xdist/issues/1386", "the run's notes"]
    assert all(WORKSHOP_WORDS.search(s) for s in caught)
    assert not any(WORKSHOP_WORDS.search(s) for s in passed)


def test_docs_and_shipped_files_need_nothing_outside_the_repository() -> None:
    # the docs, and what the wheel ships (the package, the hardware profiles), name sources a user has
    assert _hits(OUTSIDE, _files("docs", "README.md", "host", "hardware")) == []
    assert OUTSIDE.search("from `../shared/toolchains`") and not OUTSIDE.search("a shared-memory ring")


def test_bench_holds_only_the_benchmarks_make_bench_runs() -> None:
    bench = ROOT / "bench"
    tree = ast.parse((bench / "run_all.py").read_text())
    listed = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "BENCHES" for t in node.targets)
    )
    scripts = sorted(p.stem for p in bench.glob("bench_*.py"))
    assert sorted(listed) == scripts
    # every other file there serves a benchmark (or run_all itself): named by one of them
    served = "\n".join(p.read_text() for p in bench.glob("*.py"))
    helpers = [p for p in bench.iterdir() if p.is_file() and not p.name.startswith("bench_") and p.name != "run_all.py"]
    own = {p: p.read_text().count(p.stem) if p.suffix == ".py" else 0 for p in helpers}
    unused = [p.name for p in helpers if served.count(p.stem) <= own[p]]
    assert unused == []
    assert not [p.name for p in bench.iterdir() if p.is_dir() and p.name != "__pycache__"]
