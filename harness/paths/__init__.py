"""Execution paths: plug-ins behind one small interface and a registry.

A path applies each Function node of a built graph its own way; `run_graph` does the
rest. A path that cannot run a feature says so with `unsupported(spec)`, and the
harness counts that reason instead of passing the example silently.
"""

from __future__ import annotations

import importlib
from typing import Callable, Protocol

from harness.build import BuiltGraph
from harness.run import RunResult
from harness.spec import GraphSpec


class Path(Protocol):
    name: str
    #: results are expected bit-identical to eager (same forward/backward code runs)
    exact_vs_eager: bool

    def available(self) -> str | None:
        """None when the path can run here, else why not (with the fix)."""

    def unsupported(self, spec: GraphSpec) -> str | None:
        """None when the path can run this spec, else a short stable reason."""

    def run(self, built: BuiltGraph) -> RunResult:
        """Run the graph; errors of torch or the Functions end up in the result."""


_REGISTRY: dict[str, Path] = {}
#: built-in paths, imported on first use so `import harness` stays light
_BUILTIN = {
    "eager": "harness.paths.eager",
    "owned": "harness.paths.native",
    "borrowed": "harness.paths.native",
    "compiled": "harness.paths.compiled",
    "dynamo": "harness.paths.dynamo",
}
#: parametrised paths "<family>:<variant>" (e.g. "compiled:aot_eager"): family -> factory,
#: set by the family's module; the factory raises UnknownPathError listing valid variants
_FAMILIES: dict[str, Callable[[str], Path]] = {}


class UnknownPathError(ValueError):
    pass


def register(path: Path) -> Path:
    _REGISTRY[path.name] = path
    return path


def register_family(family: str, factory: Callable[[str], Path]) -> None:
    _FAMILIES[family] = factory


def get(name: str) -> Path:
    family, colon, variant = name.partition(":")
    if colon and family in _BUILTIN:
        importlib.import_module(_BUILTIN[family])  # registers its family
    if colon and family in _FAMILIES:
        return _FAMILIES[family](variant)
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])  # registers itself
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownPathError(
            f"unknown path {name!r}; valid paths: {', '.join(names())}.") from None


def names() -> list[str]:
    return list(dict.fromkeys([*_BUILTIN, *_REGISTRY]))


def parse(text: str) -> list[Path]:
    """'eager,owned' -> paths; an unknown name lists the valid ones."""
    return [get(n.strip()) for n in text.split(",") if n.strip()]


def available_names() -> list[str]:
    return [n for n in names() if get(n).available() is None]


def run_path(path: Path, built: BuiltGraph) -> RunResult:
    reason = path.unsupported(built.spec)
    if reason is not None:
        return RunResult(path.name, status="unsupported", reason=reason)
    return path.run(built)


__all__ = ["Path", "UnknownPathError", "available_names", "get", "names", "parse", "register", "register_family",
           "run_path"]
