"""The packages under ``src/rltune_daemon`` import each other in one direction only.

A unit is a subpackage (``sim``, ``placement``, ...) or a top-level module (``errors``, ``stats``, ...).
Every ``import rltune_daemon.X`` and ``from rltune_daemon.X ... import`` counts, wherever it stands: at
the top, inside a function, or under ``TYPE_CHECKING``. A function-local import hides a cycle from the
interpreter, not from the design: the two packages still cannot be understood, tested or moved apart.
The graph is read from the source with ``ast``, so nothing is imported to check it (module names
passed to ``importlib.import_module`` as strings are not seen).
"""

from __future__ import annotations

import ast
from collections import deque
from itertools import pairwise
from pathlib import Path

ROOT_PACKAGE = "rltune_daemon"
SRC = Path(__file__).resolve().parents[1] / "src" / ROOT_PACKAGE
ROOT = "<rltune_daemon>"  # the package's own __init__ (``from rltune_daemon import __version__``)

Graph = dict[str, dict[str, list[str]]]  # unit -> imported unit -> "file:line" of each import


def _units() -> set[str]:
    out = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    out |= {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    return out


def _module_name(path: Path) -> tuple[list[str], bool]:
    """Dotted parts of the module a file defines, and whether it is a package's ``__init__``."""
    parts = [ROOT_PACKAGE, *path.relative_to(SRC).with_suffix("").parts]
    if parts[-1] == "__init__":
        return parts[:-1], True
    return parts, False


def _imported(node: ast.Import | ast.ImportFrom, here: list[str], is_package: bool) -> list[str]:
    """Absolute dotted names one import statement reaches (``from P import m`` reaches ``P.m``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = here if is_package else here[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    return [f"{module}.{alias.name}" for alias in node.names]


def _unit_of(dotted: str, units: set[str]) -> str | None:
    parts = dotted.split(".")
    if parts[0] != ROOT_PACKAGE:
        return None
    if len(parts) > 1 and parts[1] in units:
        return parts[1]
    return ROOT  # a name defined in the package's own __init__


def import_graph() -> Graph:
    units = _units()
    graph: Graph = {unit: {} for unit in [*units, ROOT]}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        source = rel.parts[0] if len(rel.parts) > 1 else (ROOT if rel.stem == "__init__" else rel.stem)
        here, is_package = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = {_unit_of(dotted, units) for dotted in _imported(node, here, is_package)}
            for target in sorted(t for t in targets if t is not None and t != source):
                graph[source].setdefault(target, []).append(f"{rel}:{node.lineno}")
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's components with more than one unit, each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def shortest_cycle(graph: Graph, component: list[str], start: str) -> list[str]:
    """A shortest cycle through ``start``, staying inside its component."""
    inside = set(component)
    parent: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph.get(v, {})):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [*reversed(path), start]
            if w in inside and w not in parent:
                parent[w] = v
                queue.append(w)
    raise AssertionError(f"no cycle through {start} in {component}")


def describe(graph: Graph, cycle: list[str]) -> str:
    steps = [cycle[0]]
    for a, b in pairwise(cycle):
        sites = graph[a][b]
        more = f" and {len(sites) - 1} more" if len(sites) > 1 else ""
        steps.append(f"-> {b} ({sites[0]}{more})")
    return " ".join(steps)


def test_graph_is_read() -> None:
    """The reader sees imports at every level, so an empty graph cannot pass for an acyclic one."""
    graph = import_graph()
    assert "placement" in graph["sim"]  # top-level import
    assert "domain" in graph["placement"]
    assert not graph["domain"], "domain is the bottom layer and imports no other package"


def test_cycle_finder_names_a_cycle() -> None:
    graph: Graph = {
        "a": {"b": ["a/x.py:1"]},
        "b": {"c": ["b/y.py:2"]},
        "c": {"a": ["c/z.py:3", "c/z.py:9"]},
        "d": {"a": ["d/w.py:4"]},
    }
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert describe(graph, shortest_cycle(graph, ["a", "b", "c"], "a")) == (
        "a -> b (a/x.py:1) -> c (b/y.py:2) -> a (c/z.py:3 and 1 more)"
    )


def report(graph: Graph) -> list[str]:
    """Each component with a shortest cycle through each of its units (every 2-cycle shows)."""
    lines: list[str] = []
    for component in strongly_connected(graph):
        lines.append(f"{', '.join(component)} import each other:")
        seen: set[str] = set()
        for unit in component:
            cycle = shortest_cycle(graph, component, unit)
            key = " ".join(sorted(cycle[:-1]))
            if key not in seen:
                seen.add(key)
                lines.append(f"  {describe(graph, cycle)}")
    return lines


def test_no_package_import_cycles() -> None:
    lines = report(import_graph())
    assert not lines, "packages import each other in a circle:\n" + "\n".join(lines)


def reachable(graph: Graph, unit: str) -> dict[str, list[str]]:
    """Every unit ``unit`` imports, directly or through others: unit -> the path that reaches it."""
    paths: dict[str, list[str]] = {unit: [unit]}
    queue = deque([unit])
    while queue:
        v = queue.popleft()
        for w in sorted(graph.get(v, {})):
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    del paths[unit]
    return paths


# The decision core does no Slurm I/O and knows no simulator; the daemon (core + live service) never
# imports the simulator; the offline tools never reach the live service. ``replay`` and ``bench`` run
# the live service against a real Slurm, and ``cli``/``demo`` assemble everything: they may.
LAYER_RULES = {
    "core": ("slurm", "sim", "service"),
    "service": ("sim",),
    "evaluate": ("service",),
    "train": ("service",),
    "site": ("service",),
    "sim": ("service",),
    "traces": ("service",),
}


def test_layers_stay_apart() -> None:
    graph = import_graph()
    broken = []
    for unit, forbidden in LAYER_RULES.items():
        assert unit in graph, f"{unit} is no longer a package: update LAYER_RULES"
        paths = reachable(graph, unit)
        for target in forbidden:
            if target in paths:
                path = paths[target]
                first = graph[path[0]][path[1]][0]
                broken.append(f"{unit} reaches {target}: {' -> '.join(path)} (first import {first})")
    assert not broken, "\n".join(broken)


def test_layer_rules_can_fail() -> None:
    graph: Graph = {"core": {"planner": ["core/a.py:1"]}, "planner": {"sim": ["planner/b.py:2"]}, "sim": {}}
    assert reachable(graph, "core") == {"planner": ["core", "planner"], "sim": ["core", "planner", "sim"]}
