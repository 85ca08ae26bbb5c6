"""The Dynamo-side seeded faults (harness/selfeval/dynamo.py), each on a hand-written graph of
its class and on one outside it.

The graphs are the Functions Dynamo traces instead of falling back to eager: plain code, no
jvp, `backward` (not `vjp`), nothing untraceable, distinct tensors, inputs that require
grad. For each fault: its path (dynamo for the dynamo_ faults, compiled for the ca_ ones)
passes on the class's graph without the fault, with every Function traced, and fails with
it; eager passes with the fault; and a graph outside the class passes on the path with it.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from unittest import mock

import pytest
from torch._functorch.autograd_function import AutogradFunctionApply

from harness import paths, selfeval
from harness.check import Verdict, check
from harness.spec import Arg, FunctionSpec, GraphSpec, HookSpec, LeafSpec, OutputSpec, Term


def _fn(*args: Arg, outputs: tuple[OutputSpec, ...], **fields) -> FunctionSpec:
    return FunctionSpec(args=args, outputs=outputs, code="plain", **fields)


def _graph(*functions: FunctionSpec, hooks: tuple[HookSpec, ...] = ()) -> GraphSpec:
    return GraphSpec(shape=(3,), leaves=(LeafSpec(), LeafSpec()), functions=functions, hooks=hooks)


def _computed(*terms: tuple[int, str, float], **fields) -> OutputSpec:
    return OutputSpec("compute", terms=tuple(Term(*t) for t in terms), **fields)


# x0 and x1 in, one output of both: sin(x0) needs x0 saved, square(x1) needs x1
_SAVES_TWO = _fn(Arg("x0"), Arg("x1"), outputs=(_computed((0, "sin", 1.5), (1, "square", 0.5)),), save=("inputs",))
_SAVES_ONE = _fn(Arg("x0"), Arg("x1"), outputs=(_computed((0, "sin", 1.5), (1, "linear", 0.5)),), save=("inputs",))
_TWO_OUTPUTS = _fn(Arg("x0"), Arg("x1"), outputs=(_computed((0, "linear", 2.0)), _computed((1, "sin", 0.5))),
                   save=("inputs",))
_ONE_OUTPUT = _fn(Arg("x0"), Arg("x1"), outputs=(_computed((0, "linear", 2.0), (1, "sin", 0.5)),), save=("inputs",))
_DOUBLES_X0 = _fn(Arg("x0"), outputs=(_computed((0, "linear", 2.0)),))
_ON_F0 = _fn(Arg("f0.0"), outputs=(_computed((0, "linear", 3.0)),))


def _reads_needs_input_grad(first: str) -> FunctionSpec:
    return _fn(Arg(first), Arg("x1"), outputs=(_computed((0, "linear", 2.0), (1, "linear", 3.0)),),
               needs_input_grad="read")


#: fault -> (its path, a graph of its class, a graph outside it)
CASES: dict[str, tuple[str, GraphSpec, GraphSpec]] = {
    "dynamo_saved_tensors_reversed": ("dynamo", _graph(_SAVES_TWO), _graph(_SAVES_ONE)),
    "dynamo_mark_non_differentiable_dropped": (
        "dynamo", _graph(_fn(Arg("x0"), outputs=(_computed((0, "linear", 1.5), non_differentiable=True),
                                                 _computed((0, "linear", 2.0))))),
        _graph(_TWO_OUTPUTS)),
    # f0.0, the output of a traced Function, as F1's first input; outside: leaves only
    "dynamo_needs_input_grad_of_intermediates_false": (
        "dynamo", _graph(_DOUBLES_X0, _reads_needs_input_grad("f0.0")), _graph(_reads_needs_input_grad("x0"))),
    "dynamo_input_returned_as_is_not_viewed": (
        "dynamo", _graph(_fn(Arg("x0"), outputs=(OutputSpec("input", slot=0), _computed((0, "linear", 2.0))))),
        _graph(_fn(Arg("x0"), outputs=(OutputSpec("view", slot=0), _computed((0, "linear", 2.0)))))),
    "dynamo_apply_grad_outputs_swapped": ("dynamo", _graph(_TWO_OUTPUTS), _graph(_ONE_OUTPUT)),
    # outside: the first gradient the backward returns is x0's, and x0 is weighted 0 (zero either way)
    "dynamo_traced_backward_scaled": (
        "dynamo", _graph(_DOUBLES_X0),
        _graph(_fn(Arg("x0"), Arg("x1"), outputs=(_computed((0, "linear", 0.0), (1, "linear", 2.0)),)))),
    # a tensor hook doubles the gradient it sees; outside: a pre-hook on the same node
    "ca_tensor_pre_hook_skipped": ("compiled", _graph(_DOUBLES_X0, _ON_F0, hooks=(HookSpec("tensor", "f0.0"),)),
                                   _graph(_DOUBLES_X0, _ON_F0, hooks=(HookSpec("pre", "f0.0"),))),
    "ca_node_post_hook_skipped": ("compiled", _graph(_DOUBLES_X0, _ON_F0, hooks=(HookSpec("post", "f0.0"),)),
                                  _graph(_DOUBLES_X0, _ON_F0, hooks=(HookSpec("tensor", "f0.0"),))),
}


@contextlib.contextmanager
def _traced_functions() -> Iterator[Counter]:
    """Counts the calls of the `autograd_function_apply` op (Dynamo put a Function in its graph)."""
    calls: Counter = Counter()
    original = AutogradFunctionApply.__call__

    def counting(self, *args, **kwargs):
        calls["apply"] += 1
        return original(self, *args, **kwargs)
    with mock.patch.object(AutogradFunctionApply, "__call__", counting):
        yield calls


def _check(spec: GraphSpec, path: str) -> Verdict:
    return check(spec, [paths.get("eager"), paths.get(path)], lifetimes=False)


def test_every_dynamo_side_fault_has_a_case():
    assert set(CASES) == {f.name for f in selfeval.FAULTS if f.family == "dynamo"}
    assert all(selfeval.get(name).paths == (path,) for name, (path, _, _) in CASES.items())


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_fault_fails_its_class_on_its_path_only_while_installed(name: str) -> None:
    path, spec, _ = CASES[name]
    with _traced_functions() as calls:
        clean = _check(spec, path)
    assert not clean.failed, clean.report()
    assert clean.outcomes[path].result.note == "", clean.outcomes[path].result.note  # no eager fallback
    if path == "dynamo":
        assert calls["apply"] > 0, "Dynamo traced no Function"
    with selfeval.installed(name):
        faulty = _check(spec, path)
    assert faulty.outcomes[path].status == "failed", faulty.report()
    assert faulty.outcomes["eager"].status == "ok", faulty.report()
    assert faulty.outcomes[path].result.note == ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_fault_leaves_a_graph_outside_its_class_alone(name: str) -> None:
    path, _, outside = CASES[name]
    with selfeval.installed(name), _traced_functions() as calls:
        verdict = _check(outside, path)
    assert not verdict.failed, verdict.report()
    assert verdict.outcomes[path].status == "ok" and verdict.outcomes[path].result.note == ""
    if path == "dynamo":
        assert calls["apply"] > 0, "Dynamo traced no Function"
