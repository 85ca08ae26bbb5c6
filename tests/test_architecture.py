"""The import graph of harness/ is kept acyclic, and layered where it matters.

The graph is read from the source, module-level and function-level imports alike (an import
inside a function, or under `if TYPE_CHECKING:`, is a dependency a reader has to follow too),
so a cycle cannot be hidden by moving its import into a function. Every module imports its
package's `__init__` when it is imported; that is not an edge (else every package would be a
cycle with each of its modules). The last tests build a deliberate cycle, and a forbidden
import, in a copy of the package, and show that the checks report them.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "harness"
#: not modules of the harness: standalone scripts kept as data (a reproducer runs on its own)
#: and the self-evaluation's site directory (a sitecustomize.py a faulted child process finds on
#: PYTHONPATH)
NOT_MODULES = ("harness/known_issues/reproducers/", "harness/selfeval/site/")
#: the oracles judge results; the machinery that runs campaigns and parses the command line is
#: built on them, never the other way round
ABOVE_THE_ORACLES = ("harness.cli", "harness.session", "harness.selection", "harness.nightly", "harness.cluster",
                     "harness.workers", "harness.prestart", "harness.campaign", "harness.replay", "harness.seeds",
                     "harness.shrink", "harness.engine", "harness.results", "harness.fuzz_target", "harness.report", "harness.progress")

#: the oracles: what judges a run (the runner below them only announces its checkpoints)
ORACLES = tuple(f"harness.oracles.{p.stem}" for p in sorted((HARNESS / "oracles").glob("*.py"))
                if p.stem != "__init__") + ("harness.oracles",)


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (anywhere in its source)."""
    name = package.name
    modules: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).as_posix()
        if relative.startswith(NOT_MODULES):
            continue
        dotted = relative[: -len(".py")].replace("/", ".")
        modules[dotted.removesuffix(".__init__")] = path

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package, up level - 1
                    parts = module.split(".") if is_package else module.split(".")[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                # `from pkg import mod` imports the module mod; `from mod import name`, mod itself
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in targets:
                found = resolve(target) if target == name or target.startswith(name + ".") else None
                if found is not None and found != module and found != name:
                    graph[module].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: each strongly connected set of two or more modules, sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def reaches(graph: dict[str, set[str]], source_prefix: str, forbidden: tuple[str, ...]) -> list[list[str]]:
    """The import chains from a module under `source_prefix` to a forbidden module (directly or
    through others), one shortest chain per pair."""
    chains = []
    for source in sorted(m for m in graph if m == source_prefix or m.startswith(source_prefix + ".")):
        seen, frontier = {source: [source]}, [source]
        while frontier:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w not in seen:
                        seen[w] = seen[v] + [w]
                        nxt.append(w)
            frontier = nxt
        chains += [seen[f] for f in forbidden if f in seen]
    return chains


def _copy_of_harness(tmp_path: Path) -> Path:
    copy = tmp_path / "harness"
    shutil.copytree(HARNESS, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    return copy


def test_the_harness_has_no_import_cycle():
    graph = import_graph(HARNESS)
    assert len(graph) > 50 and "harness.oracles.compare" in graph["harness.check"]  # the graph is read at all
    assert cycles(graph) == []


def test_the_oracles_import_nothing_of_the_campaigns_or_the_command_line():
    graph = import_graph(HARNESS)
    assert reaches(graph, "harness.oracles", ABOVE_THE_ORACLES) == []


def test_the_runner_imports_nothing_of_the_oracles():
    # the oracles that watch a run (the lifetime tracker) are its observers, registered by
    # whoever sets the run up (harness.run.Observer); the runner only announces
    graph = import_graph(HARNESS)
    assert "harness.oracles.lifetimes" in graph and "harness.run" in graph["harness.oracles.lifetimes"]
    assert reaches(graph, "harness.run", ORACLES) == []


def test_a_cycle_is_reported_even_through_a_function_level_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from . import c\n")
    (package / "c.py").write_text("def later():\n    from pkg.a import name\n")
    (package / "d.py").write_text("import pkg.a\n")  # imports into the cycle, not part of it
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_a_cycle_added_to_the_harness_fails_the_contract(tmp_path):
    copy = _copy_of_harness(tmp_path)
    assert cycles(import_graph(copy)) == []
    compare = copy / "oracles" / "compare.py"
    compare.write_text(compare.read_text() + "\n\ndef _later():\n    from harness import check  # noqa: F401\n")
    found = cycles(import_graph(copy))
    assert len(found) == 1 and {"harness.check", "harness.oracles.compare"} <= set(found[0]), found


def test_an_oracle_importing_the_command_line_breaks_the_layers(tmp_path):
    copy = _copy_of_harness(tmp_path)
    metadata = copy / "oracles" / "metadata.py"
    metadata.write_text(metadata.read_text() + "\n\ndef _later():\n    from harness.selection import selected_paths  # noqa: F401\n")
    chains = reaches(import_graph(copy), "harness.oracles", ABOVE_THE_ORACLES)
    assert ["harness.oracles.metadata", "harness.selection"] in chains, chains


def test_the_runner_importing_an_oracle_breaks_the_layers(tmp_path):
    copy = _copy_of_harness(tmp_path)
    runner = copy / "run.py"
    runner.write_text(runner.read_text() + "\n\ndef _later():\n    from harness.oracles import bounds  # noqa: F401\n")
    chains = reaches(import_graph(copy), "harness.run", ORACLES)
    assert ["harness.run", "harness.oracles.bounds"] in chains, chains
