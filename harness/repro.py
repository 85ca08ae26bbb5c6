"""Write a failure as a standalone Python script that needs nothing but torch.

The script carries the spec as JSON and the source of the harness modules that build
and judge it (registered under their own names), so it runs anywhere torch runs, with
no checkout. It exits 1 and prints the mismatches when the failure reproduces, 0 when
it does not.

Given the verdict that found the failure, the writer also tries the spec with every
Function in the plain style (harness/plain.py); when the same paths fail for the same
reasons, the script runs that spec and carries its Function classes as readable code,
which is what it runs (handed to the harness through build.PLAIN_CLASSES).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from typing import TYPE_CHECKING

from harness import plain
from harness.spec import GraphSpec, SpecError

if TYPE_CHECKING:
    from harness.check import Verdict

#: modules a reproducer needs, packages before their contents; except harness.known_issues,
#: whose __init__ imports its family modules, so they come first (each found in sys.modules)
MODULES = (
    "harness", "harness.spec", "harness.devices", "harness.dataflow", "harness.plain", "harness.build", "harness.custom_op",
    "harness.oracles",
    "harness.oracles.lifetimes", "harness.run", "harness.oracles.compare", "harness.oracles.math",
    "harness.oracles.bounds", "harness.oracles.metadata", "harness.known_issues.entry",
    "harness.known_issues.shared", "harness.known_issues.eager", "harness.known_issues.compiled_autograd",
    "harness.known_issues.dynamo", "harness.known_issues.aot_autograd", "harness.known_issues.func",
    "harness.known_issues",
    "harness.paths", "harness.paths.eager", "harness.paths.compiled", "harness.paths.tracing", "harness.paths.dynamo",
    "harness.paths.func",
    "harness.paths.on_device", "harness.check", "harness.oracles.twins",
)
#: paths that need the compiled extension, so their reproducers use the installed harness
NATIVE_PATHS = {"owned", "borrowed"}
PACKAGES = {"harness", "harness.oracles", "harness.paths", "harness.known_issues"}

_TEMPLATE = '''\
#!/usr/bin/env python3
"""Reproducer written by the autograd.Function differential harness.

{summary}

Needs only torch (written with torch {torch}). Run: python {name}
Exit status 1 means the failure reproduced; 0 means it did not.
"""
import sys
import types

import torch

{functions}
SPEC = {spec!r}
PATHS = {paths!r}
DEVICE = {device!r}
TWINS = {twins!r}  # the twin-form oracle's pair that this failure is against (harness/oracles/twins.py), or False

_SOURCES = {{
{sources}
}}


class _OnlyEmbedded:
    """Refuse any harness module this script does not carry, so it never silently
    falls back to an installed copy."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if (name == "harness" or name.startswith("harness.")) and name not in _SOURCES:
            raise ModuleNotFoundError(f"reproducer does not embed {{name}}")
        return None


def _install_harness() -> None:
    if not _SOURCES:  # a native path: use the installed harness and its extension
        return
    sys.meta_path.insert(0, _OnlyEmbedded)
    for name, source in _SOURCES.items():
        module = types.ModuleType(name)
        module.__file__ = "<reproducer:" + name + ">"
        if name in {packages!r}:
            module.__path__ = []
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)


def main() -> int:
    _install_harness()
    from harness import build, check, paths
    from harness.spec import GraphSpec

    build.PLAIN_CLASSES.update(PLAIN_CLASSES)
    spec = GraphSpec.from_json(SPEC)
    verdict = check.check(spec, [paths.get(name) for name in PATHS], DEVICE, twins=TWINS)
    for outcome in verdict.outcomes.values():
        print(f"{{outcome.path}}: {{outcome.status}} {{outcome.reason}}")
    if verdict.failed:
        print(verdict.report())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def write_reproducer(spec: GraphSpec, paths: list[str], device: str, summary: str,
                     destination: str | Path, *, verdict: "Verdict | None" = None,
                     twins: bool | str = False) -> Path:
    """Write the script. With `verdict` (the check of `spec` that failed), the plain-style
    spec is tried and written instead when it fails the same way. twins: the check's twins
    option (a failure against a twin names its pair: harness.oracles.twins.pair_of_cause)."""
    import torch

    written = _plain_variant(spec, paths, device, verdict, twins) if verdict is not None else None
    classes = ""
    if written is not None:
        spec, plain_verdict = written
        summary = (f"{plain_verdict.report()}\n\nThe Functions are written out below, in the plain style; "
                   "they fail the same way as the generated spec that was found.")
        shape, dtype = tuple(spec.shape), getattr(torch, spec.dtype)
        sources = [plain.function_source(fn, n, shape, dtype, device)
                   for n, fn in enumerate(spec.functions)]
        names = ", ".join(f"{n}: F{n}" for n in range(len(sources)))
        classes = "\n\n" + "\n\n".join(sources) + f"\n\nPLAIN_CLASSES = {{{names}}}  # what the harness runs\n"
    else:
        classes = "\nPLAIN_CLASSES = {}  # the Functions are generated from SPEC\n"
    destination = Path(destination)
    torch_only = not {p.partition("@")[0] for p in paths} & NATIVE_PATHS  # "owned@cuda" is native too
    if not torch_only:
        summary += ("\n\nThis failure involves a native path (owned/borrowed), which needs the compiled "
                    "extension: run it with this project installed (pip install -e .).")
    sources = "" if not torch_only else "\n".join(f"    {name!r}: {Path(importlib.import_module(name).__file__).read_text()!r},"
                        for name in MODULES)
    text = _TEMPLATE.format(
        summary=summary.replace('"""', "'''"), torch=torch.__version__, name=destination.name,
        functions=classes, spec=spec.to_json(), paths=list(paths), device=device, twins=twins,
        sources=sources, packages=sorted(PACKAGES),
    )
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(text)
    return destination


def _plain_variant(spec: GraphSpec, paths: list[str], device: str, verdict: "Verdict",
                   twins: bool | str = False) -> "tuple[GraphSpec, Verdict] | None":
    """The spec with every Function plain, and its verdict, when it fails the same way."""
    from harness import paths as path_registry
    from harness.check import check

    try:
        variant = plain.in_code_style(spec, "plain")
    except SpecError:  # e.g. a tuple-valued output constant, which plain cannot write
        return None
    if not verdict.failed:
        return None
    again = check(variant, [path_registry.get(n) for n in paths], device, twins=twins)
    same = {(o.path, o.reason) for o in again.failed} == {(o.path, o.reason) for o in verdict.failed}
    return (variant, again) if same else None


__all__ = ["write_reproducer"]
