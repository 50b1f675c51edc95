"""The package layout: imports between rulegen's packages and top-level modules go one way.

Why: a cycle between packages makes every part depend on every other (a change to the
dashboard can break spec loading), and an import against the grain is how the first cycle
starts. Every ``import`` under ``src/rulegen`` counts, at module level, inside a function or
under ``TYPE_CHECKING`` alike: a function-level import hides a cycle, it does not remove it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src" / "rulegen"
ROOT = "rulegen"  # the package's own __init__.py: the library API

# Units (a package or a top-level module of ``src/rulegen``), lowest layer first. A unit may
# import units of lower layers only; units of one layer may import each other only where the
# layer is open (the foundation's helpers), and never in a cycle.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("core", "errors", "units", "gotemplate", "sandbox",
                    "templating", "blockyaml", "output", "fanout", "promapi", "progress",
                    "pipeline")),
    ("source: YAML with positions, diagnostics, field checks", ("source",)),
    ("catalog: signal definitions", ("catalog",)),
    ("spec: the user-facing models", ("spec",)),
    ("generated: the output model", ("generated",)),
    ("shared by several features", ("host",)),
    ("features", ("alerts", "slo", "diagnosis")),
    ("service: the whole spec resolved", ("pipeline.service", "testruns")),
    ("consumers of resolved specs", ("routing", "dashboard")),
    ("render: output formats", ("render",)),
    ("a target's SLO tests made of rendered parts", ("pipeline.vmalert_slo",)),
    ("target outputs made of rendered parts", ("pipeline.victoriametrics",)),
    ("validate: external tools", ("validate",)),
    ("promtool tests cut into units", ("pipeline.testunits",)),
    ("units' shapes", ("pipeline.shapes",)),
    ("units run, shared and cached", ("pipeline.promtool_runs",)),
    ("load", ("load", "pipeline.rendercache", "pipeline.packed")),
    ("build", ("build",)),
    ("outdir", ("outdir",)),
    ("commands", ("lint", "backtest", "explain", "starter")),
    ("commands built on commands", ("diff", "repair")),
    ("import: other tools' rules and SLOs → specs", ("importer",)),
    ("library API", (ROOT,)),
    ("cli", ("cli",)),
    ("entry point", ("__main__",)),
)  # fmt: skip
OPEN_LAYERS = frozenset({"foundation"})
# Packages whose modules sit in layers of their own (``pipeline.service`` below ``build``):
# each module is a unit, the package's ``__init__`` (a docstring) the unit of its name.
SPLIT = frozenset({"pipeline"})

Edge = tuple[str, str, str]  # importing unit, imported unit, "file:line" of the import


def _units() -> set[str]:
    """Every unit that exists under ``src/rulegen``."""
    out = {ROOT}
    for path in SRC.iterdir():
        if path.suffix == ".py" and path.stem != "__init__":
            out.add(path.stem)
        elif path.is_dir() and (path / "__init__.py").exists():
            out.add(path.name)
            if path.name in SPLIT:
                out.update(
                    f"{path.name}.{m.stem}" for m in path.glob("*.py") if m.stem != "__init__"
                )
    return out


def _unit_of_file(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts == ("__init__",):
        return ROOT
    if parts[0] in SPLIT and len(parts) > 1 and parts[1] != "__init__":
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def _module_of_file(path: Path) -> list[str]:
    parts = ["rulegen", *path.relative_to(SRC).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _targets(node: ast.AST, path: Path, units: set[str]) -> Iterator[str]:
    """The units an import statement imports."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] == "rulegen":
                yield _unit_of_module(parts[1:])
        return
    if not isinstance(node, ast.ImportFrom):
        return
    parts = _imported_module(node, path)
    if parts[0] != "rulegen":
        return
    if len(parts) == 2 and parts[1] in SPLIT:  # ``from rulegen.pipeline import service``
        yield from (f"{parts[1]}.{a.name}" for a in node.names)
    elif len(parts) > 1:
        yield _unit_of_module(parts[1:])
    else:
        for alias in node.names:  # ``from rulegen import units, __version__``
            yield alias.name if alias.name in units else ROOT


def _imported_module(node: ast.ImportFrom, path: Path) -> list[str]:
    """The dotted module a ``from … import`` names, relative imports made absolute."""
    if not node.level:
        return (node.module or "").split(".")
    package = _module_of_file(path)
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return [*base, *(node.module.split(".") if node.module else [])]


def _unit_of_module(parts: list[str]) -> str:
    """The unit of module ``rulegen.<parts>``."""
    if not parts:
        return ROOT
    if parts[0] in SPLIT and len(parts) > 1:
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def import_edges() -> list[Edge]:
    """Every import from one unit of ``src/rulegen`` into another."""
    units = _units()
    edges: list[Edge] = []
    for path in sorted(SRC.rglob("*.py")):
        source = _unit_of_file(path)
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            for target in _targets(node, path, units):
                if target != source:
                    where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
                    edges.append((source, target, where))
    return edges


def _cycles(edges: list[Edge]) -> list[tuple[set[str], list[str]]]:
    """Each group of units that import each other in a circle, and its shortest cycle (a
    list of units, first == last)."""
    graph: dict[str, set[str]] = {}
    for source, target, _ in edges:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    reach = {unit: _reachable(graph, unit) for unit in graph}
    components: dict[frozenset[str], str] = {}
    for unit in sorted(graph):
        if unit in reach[unit]:  # a path leads back to it
            members = frozenset(u for u in reach[unit] if unit in reach[u])
            components.setdefault(members, unit)
    return [(set(c), _path_back(graph, start, set(c))) for c, start in components.items()]


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every unit an import path from ``start`` leads to (``start`` only through a cycle)."""
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        unit = todo.pop()
        if unit not in seen:
            seen.add(unit)
            todo.extend(graph[unit])
    return seen


def _path_back(graph: dict[str, set[str]], start: str, within: set[str]) -> list[str]:
    """The shortest path from ``start`` back to itself inside one component."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & within):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a component without a cycle back to it")


def _layer_of() -> dict[str, tuple[int, str]]:
    return {unit: (rank, name) for rank, (name, units) in enumerate(LAYERS) for unit in units}


def test_every_package_and_top_level_module_has_a_layer() -> None:
    layered = set(_layer_of())
    missing = sorted(_units() - layered)
    assert not missing, (
        f"add {', '.join(missing)} to LAYERS in tests/test_architecture.py, in the layer of "
        "what it imports and below what imports it"
    )
    stale = sorted(layered - _units())
    assert not stale, f"LAYERS names units that no longer exist: {', '.join(stale)}"


def test_no_import_cycle_between_packages_and_top_level_modules() -> None:
    edges = import_edges()
    where = {(s, t): w for s, t, w in reversed(edges)}
    messages = []
    for component, cycle in _cycles(edges):
        steps = [f"  {a} -> {b}  ({where[a, b]})" for a, b in zip(cycle, cycle[1:], strict=False)]
        messages.append(
            f"import cycle among {', '.join(sorted(component))}, for one: "
            + " -> ".join(cycle)
            + "\n"
            + "\n".join(steps)
        )
    assert not messages, "\n".join(messages)


def test_imports_follow_the_layer_order() -> None:
    layer = _layer_of()
    problems = []
    for source, target, where in import_edges():
        if source not in layer or target not in layer:
            continue  # reported by the test above
        (rank, name), (target_rank, target_name) = layer[source], layer[target]
        if target_rank > rank or (target_rank == rank and name not in OPEN_LAYERS):
            problems.append(
                f"{where}: {source} ({name}) imports {target} ({target_name}), which is "
                + ("a higher layer" if target_rank > rank else "in the same layer")
                + ": move the shared piece down, or pass the data in from above"
            )
    assert not problems, "imports against the layer order:\n" + "\n".join(problems)


def test_no_source_module_is_named_like_a_test() -> None:
    """Why: a test generator called ``tests.py`` reads as the project's own tests, and
    pytest may collect a ``test_*.py`` under ``src``."""
    named = [
        str(p.relative_to(REPO))
        for p in SRC.rglob("*.py")
        if p.name == "tests.py" or p.name.startswith("test_")
    ]
    assert not named, f"rename (a generator is testgen.py): {', '.join(sorted(named))}"
