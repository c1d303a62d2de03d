"""The host's layers, as docs/architecture.md declares them: an AST walk of host/thermrig (imports at
module level and inside functions) that fails on an import against the declared order, and on any
import cycle between modules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "host" / "thermrig"
DOC = REPO / "docs" / "architecture.md"


def declared_layers(doc: str) -> dict[str, int]:
    """Module or package name -> its layer, from the table under the `layers:` marker."""
    table = doc[doc.index("<!-- layers:") :]
    layers: dict[str, int] = {}
    for row in table.splitlines()[3:]:
        if not row.startswith("|"):
            break
        rank, names = (cell.strip() for cell in row.strip("|").split("|"))
        for name in re.findall(r"`([\w.]+)`", names):
            layers[name] = int(rank.split()[0])
    return layers


def modules(package: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: set[str]) -> set[str]:
    """The thermrig modules a file imports, anywhere in it."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
            out |= {n for n in names if n in known} or ({node.module} & known)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names} & known
    return out


def unresolved(package: Path) -> list[str]:
    """Imports of thermrig modules that do not exist (a module renamed or moved without its importers):
    the graph above would pass over them."""
    known = set(modules(package))
    bad = []
    for module, path in sorted(modules(package).items()):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] == "thermrig" and node.module not in known:
                    names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.split(".")[0] == "thermrig" and a.name not in known]
            bad += [f"{module} imports {name}" for name in names]
    return bad


def layer_of(module: str, layers: dict[str, int]) -> tuple[str, int]:
    """The declared unit (the longest declared prefix) a module belongs to, and its layer."""
    unit = max((n for n in layers if module == n or module.startswith(n + ".")), key=len, default=None)
    if unit is None:
        pytest.fail(f"{module} is in no layer of {DOC.name}: add it to the table")
    return unit, layers[unit]


def violations(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    bad = []
    for module, targets in sorted(graph.items()):
        unit, rank = layer_of(module, layers)
        for target in sorted(targets):
            other, other_rank = layer_of(target, layers)
            if other != unit and (other_rank > rank or (other_rank == rank and rank > 0)):
                bad.append(f"{module} (layer {rank}) imports {target} (layer {other_rank})")
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in graph:
        if v not in index:
            visit(v)
    return found


SIMULATOR = ("thermrig.sim", "thermrig.virtual_drive")


def simulator_imports(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    """Imports from a procedure module into the simulator: procedures see a rig and a drive only
    through thermrig.dut's protocols, built at the CLI layer."""
    procedures = layers["thermrig.campaign"]
    bad = []
    for module, targets in sorted(graph.items()):
        if layer_of(module, layers)[1] != procedures:
            continue
        for target in sorted(targets):
            if any(target == s or target.startswith(s + ".") for s in SIMULATOR):
                bad.append(f"{module} imports {target}")
    return bad


def import_graph(package: Path) -> dict[str, set[str]]:
    mods = modules(package)
    return {m: imports(p, set(mods)) - {m} for m, p in mods.items()}


def test_imports_follow_the_declared_layers() -> None:
    layers = declared_layers(DOC.read_text())
    assert layers["thermrig.cli"] > layers["thermrig.campaign"] > layers["thermrig.protocol"]
    assert violations(import_graph(PACKAGE), layers) == []


def test_procedures_do_not_import_the_simulator() -> None:
    assert simulator_imports(import_graph(PACKAGE), declared_layers(DOC.read_text())) == []


# Where the simulator's objects are built (docs/architecture.md, "Device under test"): the testbed,
# `thermrig sim`, which serves the simulated rig itself, `thermrig calibrate`, which hands the calibration
# the plant's replay, `rig bringup --sim`, whose operator the plant plays, and `rig identify`, which fits
# the simulator's chassis to a recording.
SIMULATOR_BUILDERS = {
    "thermrig.testbed",
    "thermrig.testbed.simulated",
    "thermrig.testbed.simulated_rig_model",
    "thermrig.cli.sim_cmd",
    "thermrig.cli.calibrate_cmd",
    "thermrig.cli.bringup_cmd",
    "thermrig.cli.identify_cmd",
    "thermrig.lab_world.world",  # the simulated lab's rigs (`thermrig lab demo`, the lab tests)
}


def test_the_simulator_is_built_only_where_declared() -> None:
    importers = {
        module
        for module, targets in import_graph(PACKAGE).items()
        if not module.startswith(SIMULATOR) and any(t.startswith(SIMULATOR) for t in targets)
    }
    assert importers <= SIMULATOR_BUILDERS, importers - SIMULATOR_BUILDERS


# Where a rig link is built: the link itself, and the testbed, which opens one session with a rig for
# every command and procedure (and leaves the rig safe however it ends).
LINK_BUILDERS = ("thermrig.link", "thermrig.testbed")


def link_constructions(package: Path) -> list[str]:
    """`RigLink(...)` calls outside LINK_BUILDERS, as module:line."""
    bad = []
    for module, path in sorted(modules(package).items()):
        if any(module == b or module.startswith(b + ".") for b in LINK_BUILDERS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name == "RigLink":
                    bad.append(f"{module}:{node.lineno}")
    return bad


def test_rig_links_are_built_only_by_the_testbed() -> None:
    assert link_constructions(PACKAGE) == []


def test_the_walk_catches_a_rig_link_built_outside_the_testbed(tmp_path: Path) -> None:
    pkg = tmp_path / "thermrig"
    for name, text in {
        "__init__.py": "",
        "link/__init__.py": "class RigLink: ...\nRigLink()\n",
        "testbed/__init__.py": "from thermrig.link import RigLink\nRigLink()\n",
        "cli/__init__.py": "",
        "cli/demo.py": "from thermrig import link\n\nwith link.RigLink('x') as l:\n    pass\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    assert link_constructions(pkg) == ["thermrig.cli.demo:3"]


def test_every_thermrig_import_names_a_module() -> None:
    assert unresolved(PACKAGE) == []


def test_no_import_cycles() -> None:
    assert cycles(import_graph(PACKAGE)) == []


def test_the_walk_catches_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "thermrig"
    for name, text in {
        "__init__.py": "",
        "protocol/__init__.py": "",
        "protocol/frame.py": "def f():\n    from thermrig.cli.main import app\n",  # inside a function
        "cli/__init__.py": "",
        "cli/main.py": "from thermrig.protocol import frame\napp = 1\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    graph = import_graph(pkg)
    layers = {"thermrig": 0, "thermrig.protocol": 1, "thermrig.cli": 8}
    assert violations(graph, layers) == ["thermrig.protocol.frame (layer 1) imports thermrig.cli.main (layer 8)"]
    assert cycles(graph) == [["thermrig.cli.main", "thermrig.protocol.frame"]]
    (pkg / "cli" / "gone.py").write_text("from thermrig.protocol.renamed import frame\n")
    assert unresolved(pkg) == ["thermrig.cli.gone imports thermrig.protocol.renamed"]


def test_the_walk_catches_a_procedure_reaching_into_the_simulator(tmp_path: Path) -> None:
    pkg = tmp_path / "thermrig"
    for name, text in {
        "__init__.py": "",
        "sim/__init__.py": "",
        "sim/simulated_rig.py": "class SimulatedRig: ...\n",
        "sim/plant_replay.py": "def replay(): ...\n",
        "campaign/__init__.py": "",
        "campaign/run_phases.py": "def f():\n    from thermrig.sim.simulated_rig import SimulatedRig\n",
        "calibration/__init__.py": "",
        "calibration/fit.py": "from thermrig.sim.plant_replay import replay\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    layers = {"thermrig": 0, "thermrig.sim": 4, "thermrig.campaign": 8, "thermrig.calibration": 8}
    graph = import_graph(pkg)
    assert simulator_imports(graph, layers) == [
        "thermrig.calibration.fit imports thermrig.sim.plant_replay",
        "thermrig.campaign.run_phases imports thermrig.sim.simulated_rig",
    ]


# The source checkout is a dev tool: only thermrig.paths knows where it is (and finds the checkout's
# build/ and hardware/ in the dev workflow); everything else asks thermrig.paths for the package's data.
CHECKOUT_AWARE = {"thermrig.paths"}


def checkout_references(package: Path) -> list[str]:
    """Modules outside CHECKOUT_AWARE that name REPO_ROOT (imported, or any name or attribute)."""
    bad: list[str] = []
    for module, path in sorted(modules(package).items()):
        if module in CHECKOUT_AWARE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            named = (
                (isinstance(node, ast.Name) and node.id == "REPO_ROOT")
                or (isinstance(node, ast.Attribute) and node.attr == "REPO_ROOT")
                or (isinstance(node, ast.alias) and node.name == "REPO_ROOT")
            )
            if named and module not in bad:
                bad.append(module)
    return bad


def test_only_the_dev_tools_know_the_source_checkout() -> None:
    assert checkout_references(PACKAGE) == []


def test_the_walk_catches_a_module_reaching_into_the_checkout(tmp_path: Path) -> None:
    pkg = tmp_path / "thermrig"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "paths.py").write_text("REPO_ROOT = 1\n")
    (pkg / "flash.py").write_text("from thermrig.paths import REPO_ROOT\nprint(REPO_ROOT)\n")
    (pkg / "report.py").write_text("import thermrig.paths\nprint(thermrig.paths.REPO_ROOT)\n")
    assert checkout_references(pkg) == ["thermrig.flash", "thermrig.report"]


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# The CLI parses its arguments, calls one procedure and prints: a function in cli/ whose body (below its
# docstring, nested functions included) runs past CLI_BODY_LINES holds logic that belongs to the layer
# of its procedure.
CLI_BODY_LINES = 40


def long_cli_functions(package: Path) -> list[str]:
    """Functions of thermrig.cli whose body below the docstring exceeds CLI_BODY_LINES, as module:name."""
    bad = []
    for module, path in sorted(modules(package).items()):
        if not _inside(module, "thermrig.cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.body[1:] if ast.get_docstring(node) is not None and len(node.body) > 1 else node.body
                assert node.end_lineno is not None
                if node.end_lineno - body[0].lineno + 1 > CLI_BODY_LINES:
                    bad.append(f"{module}:{node.name}")
    return bad


def test_cli_functions_are_short() -> None:
    assert long_cli_functions(PACKAGE) == []


def test_the_walk_catches_a_long_cli_function(tmp_path: Path) -> None:
    pkg = tmp_path / "thermrig"
    short = "    x = 1\n" * CLI_BODY_LINES
    for name, text in {
        "__init__.py": "",
        "cli/__init__.py": "",
        "cli/ok.py": f'def ok():\n    """A docstring\n    of two lines."""\n{short}',
        "cli/long.py": f"def outer():\n    def inner():\n        pass\n{short}",
        "campaign/__init__.py": f"def elsewhere():\n{short}    x = 2\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    assert long_cli_functions(pkg) == ["thermrig.cli.long:outer"]


# Signal handlers are installed in one place, thermrig.testbed.signals: SIGTERM stopping a testbed as
# Ctrl-C does, both held while a rig is made safe, and the signals ending a loop that waits on an event.
SIGNAL_INSTALLERS = ("thermrig.testbed",)


def signal_installs(package: Path) -> list[str]:
    """`signal.signal(...)` calls (or of `from signal import signal`) outside SIGNAL_INSTALLERS, as
    module:line."""
    bad = []
    for module, path in sorted(modules(package).items()):
        if any(_inside(module, p) for p in SIGNAL_INSTALLERS):
            continue
        tree = ast.parse(path.read_text())
        bare = {
            a.asname or a.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "signal"
            for a in node.names
            if a.name == "signal"
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            dotted = isinstance(f, ast.Attribute) and f.attr == "signal" and ast.unparse(f.value) == "signal"
            if dotted or (isinstance(f, ast.Name) and f.id in bare):
                bad.append(f"{module}:{node.lineno}")
    return bad


def test_signal_handlers_are_installed_only_by_the_testbed() -> None:
    assert signal_installs(PACKAGE) == []


def test_the_walk_catches_a_signal_handler_installed_outside_the_testbed(tmp_path: Path) -> None:
    pkg = tmp_path / "thermrig"
    for name, text in {
        "__init__.py": "",
        "testbed/__init__.py": "",
        "testbed/signals.py": "import signal\nsignal.signal(signal.SIGTERM, print)\n",
        "cli/__init__.py": "import signal\nsignal.getsignal(signal.SIGINT)\nsignal.signal(signal.SIGINT, print)\n",
        "cli/other.py": "from signal import SIGTERM, signal as install\n\ninstall(SIGTERM, print)\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    assert signal_installs(pkg) == ["thermrig.cli:3", "thermrig.cli.other:3"]


# One host path to the safe state: the testbed sends SAFE (Testbed.safe: on every way out of a session,
# and for any procedure or command that puts a rig safe). The exceptions, each with its reason, are
# where the SAFE command is itself what is tested.
SAFE_SENDERS = ("thermrig.testbed",)
SAFE_UNDER_TEST = {
    "thermrig.conformance.checks:commands": "the conformance check that every command is acked: SAFE is one",
}


def safe_commands(package: Path) -> list[str]:
    """`command("SAFE", ...)` calls outside SAFE_SENDERS, as module:function (module:<module> at the top)."""
    found = []
    for module, path in sorted(modules(package).items()):
        if any(_inside(module, p) for p in SAFE_SENDERS):
            continue

        def walk(node: ast.AST, where: str, module: str = module) -> None:
            for child in ast.iter_child_nodes(node):
                inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
                f = child.func if isinstance(child, ast.Call) else None
                named = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                args = child.args if isinstance(child, ast.Call) else []
                if named == "command" and args and isinstance(args[0], ast.Constant) and args[0].value == "SAFE":
                    found.append(f"{module}:{where}")
                walk(child, inner)

        walk(ast.parse(path.read_text()), "<module>")
    return found


def test_only_the_testbed_sends_safe_but_where_safe_is_under_test() -> None:
    found = safe_commands(PACKAGE)
    assert sorted(set(found) - set(SAFE_UNDER_TEST)) == []
    assert set(SAFE_UNDER_TEST) <= set(found), "an exception that no longer sends SAFE: take it off the list"


def test_the_walk_catches_safe_sent_by_hand(tmp_path: Path) -> None:
    pkg = tmp_path / "thermrig"
    for name, text in {
        "__init__.py": "",
        "testbed/__init__.py": "def safe(link):\n    link.command('SAFE')\n",
        "campaign/__init__.py": "def after(bed):\n    bed.safe()\n    bed.link.command('CLEAR')\n",
        "campaign/run.py": "def run(link):\n    def cleanup():\n        link.command('SAFE', 1)\n",
        "cli/__init__.py": "command('SAFE')\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    assert safe_commands(pkg) == ["thermrig.campaign.run:cleanup", "thermrig.cli:<module>"]
