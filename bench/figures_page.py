"""docs/figures.md, written by `make bench`: one section per benchmark, each with when, at which revision,
on which machine and under what load it was measured, and what the benchmark printed. A run of some
benchmarks (`make bench BENCHES="bench_x bench_y"`) replaces their sections and keeps the others."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HEADER = """# Figures

What `make bench` measured: each section is one benchmark's output, with the date, the revision, the
machine and the load average while it ran (a busy machine moves real-time figures; nothing in the tests
asserts a time). `make bench` rewrites every section; `make bench BENCHES="bench_cooldown"` only the
ones named. What each figure means is in the guide the section links to.
"""
BEGIN = "<!-- bench:{name} -->"
END = "<!-- /bench:{name} -->"


def _revision(root: Path) -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev


def _machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores{', ' + model if model else ''}, {mem_gib:.0f} GiB, {platform.system()}"


@dataclass
class Measured:
    """One benchmark's run: what it printed and the conditions it ran in."""

    name: str
    doc: str
    output: str
    ok: bool
    started: datetime
    load_before: float
    load_after: float
    revision: str
    machine: str

    def section(self) -> str:
        status = "" if self.ok else " **The benchmark failed; its output is below.**"
        return "\n".join(
            [
                BEGIN.format(name=self.name),
                f"## {self.name}",
                "",
                f"{self.doc}",
                "",
                f"Measured {self.started:%Y-%m-%d %H:%M} UTC at revision `{self.revision}` on {self.machine}; "
                f"load average {self.load_before:.1f} before, {self.load_after:.1f} after.{status}",
                "",
                "```",
                self.output.rstrip(),
                "```",
                END.format(name=self.name),
            ]
        )


def conditions(root: Path) -> tuple[datetime, float, str, str]:
    return datetime.now(UTC), os.getloadavg()[0], _revision(root), _machine()


def write(page: Path, measured: list[Measured], order: list[str], whole: bool) -> None:
    """Replace the measured benchmarks' sections in page (created if absent), in the benchmarks' order.
    whole: a run of every benchmark, which writes the page anew (sections of earlier runs go)."""
    text = page.read_text() if page.exists() and not whole else HEADER
    sections = {
        m.group(1): m.group(0) for m in re.finditer(r"<!-- bench:(\S+) -->.*?<!-- /bench:\1 -->", text, flags=re.S)
    }
    for m in measured:
        sections[m.name] = m.section()
    known = [n for n in order if n in sections] + sorted(n for n in sections if n not in order)
    page.write_text(HEADER + "\n" + "\n\n".join(sections[n] for n in known) + "\n")
