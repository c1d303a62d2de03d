"""Figures on the host package, rerunnable at any commit: lines per package, the ten longest
functions, and the imports from procedure modules (layer `procedures` of docs/architecture.md) into
the simulator (`thermrig.sim`, `thermrig.virtual_drive`).

    python3 scripts/code_figures.py [ROOT]     # ROOT: a checkout (default: this one)
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

PROCEDURES = ("campaign", "calibration", "conformance", "flash", "report", "grafana", "demo")
SIMULATOR = ("thermrig.sim", "thermrig.virtual_drive", "thermrig.plant")


def main(root: Path) -> None:
    package = root / "host" / "thermrig"
    lines: Counter[str] = Counter()
    functions: list[tuple[int, str]] = []
    crossings: list[str] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        top = rel.parts[0] if len(rel.parts) > 1 else "(base modules)"
        text = path.read_text()
        lines[top] += len(text.splitlines())
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.lineno} {node.name}"))
            if top in PROCEDURES and isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                for name in names:
                    if node.__class__ is ast.ImportFrom and node.level:
                        continue
                    if any(name == s or name.startswith(s + ".") for s in SIMULATOR):
                        crossings.append(f"{rel}:{node.lineno} {name}")
    print("lines per package")
    for name, count in sorted(lines.items(), key=lambda kv: -kv[1]):
        print(f"  {count:6d}  {name}")
    print(f"  {sum(lines.values()):6d}  total")
    print("ten longest functions (lines)")
    for length, where in sorted(functions, reverse=True)[:10]:
        print(f"  {length:4d}  {where}")
    print(f"imports from procedures into the simulator: {len(crossings)}")
    for where in crossings:
        print(f"  {where}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
