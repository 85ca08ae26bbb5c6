"""What to count: plain-data case specs, the built-in scenarios, and a registry for more.

A case is data (a frozen `CaseSpec`), never a live object, because it is rebuilt inside
the callgrind worker: `factory` names an importable ``"module:function"`` that, called
with ``**params`` (JSON values), returns a `harness.counting.workloads.Workload`.

This module does not import torch, so the parent process stays light.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: `compiled`: the eager forward, the backward through compiled autograd's cached graph
PATHS = ("eager", "owned", "borrowed", "compiled")
#: what `bench` counts unless told: compiled autograd is asked for by name (its first
#: capture of each graph costs seconds under valgrind)
DEFAULT_PATHS = ("eager", "owned", "borrowed")
#: paths that change only the backward: their forward is another path's (no forward row)
BACKWARD_ONLY_PATHS = ("compiled",)
PHASES = ("forward", "backward")
BUILTIN_SCENARIOS = ("seed", "sweep", "graph", "chain")

#: the seed benchmark: one apply, 13 tensor inputs requiring grad, 2 of them returned
SEED_INPUTS = 13
SEED_OUTPUTS = 2
#: 0..40 crosses the borrowed SmallVector's inline capacity (24) with room on both sides
DEFAULT_SWEEP_INPUTS = tuple(range(41))

_RETURNING_INPUTS = "harness.counting.workloads:returning_inputs"
_BUILTIN_GRAPHS = {"diamond": "harness.counting.workloads:diamond_graph"}
_CHAIN = "harness.counting.workloads:chain_graph"
#: Function nodes in the chain scenario's graphs: the per-node cost is the slope
DEFAULT_CHAIN_NODES = (1, 2, 4, 8)


class CaseError(ValueError):
    """A case, scenario or factory name that cannot be used."""


@dataclass(frozen=True)
class CaseSpec:
    """One thing to count. `params_json` is canonical JSON so the spec stays hashable."""

    scenario: str
    name: str
    factory: str
    params_json: str = "{}"
    #: input count shown in tables and plots; None: the worker counts the workload's inputs
    inputs: int | None = None

    @classmethod
    def make(cls, scenario: str, name: str, factory: str, params: dict[str, Any] | None = None,
             *, inputs: int | None = None) -> CaseSpec:
        _check_factory_name(factory)
        try:
            params_json = json.dumps(params or {}, sort_keys=True, separators=(",", ":"))
        except TypeError as e:
            raise CaseError(f"params of case {name!r} are not JSON values ({e}); pass plain "
                            "dicts, lists, strings and numbers") from None
        return cls(scenario, name, factory, params_json, inputs)

    @property
    def params(self) -> dict[str, Any]:
        return json.loads(self.params_json)

    def to_plain(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "name": self.name, "factory": self.factory,
                "params": self.params, "inputs": self.inputs}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> CaseSpec:
        return cls.make(data["scenario"], data["name"], data["factory"], data.get("params"),
                        inputs=data.get("inputs"))


def _check_factory_name(factory: str) -> None:
    module, sep, attr = factory.partition(":")
    if not sep or not module or not attr:
        raise CaseError(f"factory {factory!r} is not of the form 'module:function', "
                        "e.g. 'harness.counting.workloads:diamond_graph'")


def resolve_factory(factory: str) -> Callable[..., Any]:
    """Import ``"module:function"``; a bad name says which part is missing."""
    _check_factory_name(factory)
    module_name, _, attr = factory.partition(":")
    module = importlib.import_module(module_name)
    try:
        target: Any = module
        for part in attr.split("."):
            target = getattr(target, part)
    except AttributeError:
        raise CaseError(f"factory {factory!r}: module {module_name!r} has no attribute "
                        f"{attr!r}; check the name after the colon") from None
    return target


# --- the registry -----------------------------------------------------------------------

_REGISTRY: dict[tuple[str, str], CaseSpec] = {}


def register_case(scenario: str, name: str, factory: str, params: dict[str, Any] | None = None,
                  *, inputs: int | None = None) -> CaseSpec:
    """Add a case to `scenario` (built-in or new); the same (scenario, name) replaces it.

    `factory` is ``"module:function"``, importable in a fresh interpreter (the worker
    runs under valgrind in its own process); it is called as ``function(**params)``
    and returns a `Workload`.
    """
    case = CaseSpec.make(scenario, name, factory, params, inputs=inputs)
    _REGISTRY[(scenario, name)] = case
    return case


def unregister_case(scenario: str, name: str) -> None:
    _REGISTRY.pop((scenario, name), None)


def registered_cases(scenario: str | None = None) -> list[CaseSpec]:
    return [c for (s, _), c in _REGISTRY.items() if scenario is None or s == scenario]


def scenario_names() -> list[str]:
    extra = sorted({s for s, _ in _REGISTRY} - set(BUILTIN_SCENARIOS))
    return [*BUILTIN_SCENARIOS, *extra]


# --- the built-in scenarios -------------------------------------------------------------


def seed_case() -> CaseSpec:
    return CaseSpec.make("seed", "seed", _RETURNING_INPUTS,
                         {"inputs": SEED_INPUTS, "outputs": SEED_OUTPUTS}, inputs=SEED_INPUTS)


def sweep_cases(inputs: Iterable[int] = DEFAULT_SWEEP_INPUTS) -> list[CaseSpec]:
    """The seed's Function shape (n inputs, the first two returned) at each input count."""
    cases = []
    for n in inputs:
        if n < 0:
            raise CaseError(f"input count {n} is negative; use counts >= 0")
        cases.append(CaseSpec.make("sweep", f"sweep-{n}", _RETURNING_INPUTS,
                                   {"inputs": n, "outputs": SEED_OUTPUTS}, inputs=n))
    return cases


def graph_cases() -> list[CaseSpec]:
    builtin = [CaseSpec.make("graph", name, factory) for name, factory in _BUILTIN_GRAPHS.items()]
    return builtin + registered_cases("graph")


def chain_cases(nodes: Iterable[int] = DEFAULT_CHAIN_NODES) -> list[CaseSpec]:
    """One leaf through `n` one-in, one-out Functions, for each n: the backward's cost per
    Function node (on the eager engine and under compiled autograd) is the slope."""
    cases = []
    for n in nodes:
        if n < 1:
            raise CaseError(f"a chain of {n} Functions: use at least 1")
        cases.append(CaseSpec.make("chain", f"chain-{n}", _CHAIN, {"nodes": n}, inputs=1))
    return cases


def region_phases(path: str, phases: Sequence[str]) -> list[str]:
    """The phases counted on `path`: a backward-only path has no forward of its own."""
    return [p for p in phases if not (p == "forward" and path in BACKWARD_ONLY_PATHS)]


def cases_for(scenarios: Sequence[str], inputs: Iterable[int] | None = None) -> list[CaseSpec]:
    """The cases of each scenario, in order; `inputs` selects the sweep's input counts."""
    cases: list[CaseSpec] = []
    for scenario in scenarios:
        if scenario == "seed":
            cases.append(seed_case())
            cases.extend(registered_cases("seed"))
        elif scenario == "sweep":
            cases.extend(sweep_cases(DEFAULT_SWEEP_INPUTS if inputs is None else inputs))
            cases.extend(registered_cases("sweep"))
        elif scenario == "graph":
            cases.extend(graph_cases())
        elif scenario == "chain":
            cases.extend(chain_cases())
            cases.extend(registered_cases("chain"))
        elif registered_cases(scenario):
            cases.extend(registered_cases(scenario))
        else:
            raise CaseError(f"unknown scenario {scenario!r}; valid scenarios: "
                            f"{', '.join(scenario_names())}")
    return cases


def parse_names(text: str, valid: Sequence[str], what: str) -> list[str]:
    """'eager,owned' -> ['eager', 'owned']; an unknown name lists the valid ones."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in valid:
            raise CaseError(f"unknown {what} {n!r}; valid {what}s: {', '.join(valid)}")
    if not names:
        raise CaseError(f"no {what} given; choose from {', '.join(valid)}")
    return names


def parse_inputs(text: str) -> list[int]:
    """'0,8,24-26' -> [0, 8, 24, 25, 26] (ranges inclusive, '..' works like '-')."""
    counts: list[int] = []
    for part in text.replace("..", "-").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                counts.extend(range(lo, hi + 1))
            else:
                counts.append(int(part))
        except ValueError:
            raise CaseError(f"input count {part!r} is not a number or range; "
                            "write e.g. '0,8,24-26'") from None
    if not counts:
        raise CaseError(f"--inputs {text!r} names no input counts; write e.g. '0,8,24-26'")
    return counts


__all__ = [
    "BACKWARD_ONLY_PATHS",
    "BUILTIN_SCENARIOS",
    "DEFAULT_CHAIN_NODES",
    "DEFAULT_PATHS",
    "DEFAULT_SWEEP_INPUTS",
    "PATHS",
    "PHASES",
    "SEED_INPUTS",
    "CaseError",
    "CaseSpec",
    "cases_for",
    "chain_cases",
    "graph_cases",
    "parse_inputs",
    "parse_names",
    "region_phases",
    "register_case",
    "registered_cases",
    "resolve_factory",
    "scenario_names",
    "seed_case",
    "sweep_cases",
    "unregister_case",
]
