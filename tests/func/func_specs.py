"""Generated specs whose Functions torch.func can run: every Function in setup_context style.

The generator draws old-style Functions about half the time, and torch.func rejects a
graph with any of them (harness/paths/func.py, OLD_STYLE). These tests rewrite each drawn
Function into setup_context style where the spec rules allow it (docs/func.md), so most
examples are really checked; the unsupported share is measured, never assumed.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from harness.spec import GraphSpec, SpecError
from strategies import graphs


def as_setup_context(spec: GraphSpec, *, vmap: bool | None = None, jvp: bool = False) -> GraphSpec | None:
    """`spec` with every Function in setup_context style (and generate_vmap_rule set to
    `vmap` unless None; a jvp added when `jvp`), or None where the spec rules forbid it."""
    functions = []
    for fn in spec.functions:
        changes: dict = {"style": "setup_context"}
        if vmap is not None:
            changes["vmap"] = vmap
        if jvp:
            changes["jvp"] = True
        if any(o.kind == "dirty" for o in fn.outputs):
            changes["save"] = tuple(s for s in fn.save if s != "outputs")
        functions.append(dataclasses.replace(fn, **changes))
    try:
        return dataclasses.replace(spec, functions=tuple(functions))
    except SpecError:
        return None


def func_graphs(*, vmap: bool | None = None, jvp: bool = False, **kwargs) -> st.SearchStrategy[GraphSpec]:
    specs = graphs(**kwargs).map(lambda s: as_setup_context(s, vmap=vmap, jvp=jvp))
    return specs.filter(lambda s: s is not None)
