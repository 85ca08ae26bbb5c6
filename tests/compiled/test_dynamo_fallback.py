"""`dynamo` after a documented graph break: the example runs again through Dynamo's eager
fallback (fullgraph=False), and that result is checked like any other."""

from __future__ import annotations

from typing import Any, Callable

import torch

from harness.build import build
from harness.check import check
from harness.paths.dynamo import DynamoPath, dynamo_path
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

# a plain Function with a user jvp: Dynamo cannot trace it with fullgraph=True
JVP = GraphSpec(
    shape=(3,), leaves=(LeafSpec(),),
    functions=(FunctionSpec(args=(Arg("x0"), Arg(const=2)),
                            outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5),)),),
                            save=("inputs",), jvp=True, code="plain"),),
    backward="backward")


def test_a_documented_graph_break_runs_through_the_eager_fallback():
    result = dynamo_path("aot_eager").run(build(JVP))
    assert result.status == "ok", result.describe_error()
    assert result.note == "graph break: Unsupported custom jvp; ran through Dynamo's eager fallback"
    # values only: in the fallback Dynamo's guards keep the frame locals of the harness's own
    # forward (the leaves) in a reference cycle until gc runs, which the lifetime rules report
    # (a finding of its own, not of this mechanism)
    verdict = check(JVP, [dynamo_path("aot_eager")], lifetimes=False)
    assert verdict.outcomes["dynamo:aot_eager"].status == "ok", verdict.report()


def test_without_a_graph_break_there_is_no_second_run():
    spec = GraphSpec(shape=JVP.shape, leaves=JVP.leaves,
                     functions=(FunctionSpec(**{**JVP.functions[0].__dict__, "jvp": False}),))
    result = dynamo_path("aot_eager").run(build(spec))
    assert (result.status, result.note) == ("ok", "")


class _WrongOnlyInTheFallback(DynamoPath):
    """aot_eager, with every forward output of the fallback run scaled by 1.5."""

    def _compile(self, fn: Callable[..., Any], fullgraph: bool = True) -> Callable[..., Any]:
        compiled = super()._compile(fn, fullgraph)
        if fullgraph:
            return compiled
        return lambda *xs: tuple(o * 1.5 for o in compiled(*xs))


def test_a_fault_visible_only_in_the_fallback_is_reported():
    path = _WrongOnlyInTheFallback("aot_eager", name="dynamo:perturbed")
    verdict = check(JVP, [path], lifetimes=False)
    outcome = verdict.outcomes["dynamo:perturbed"]
    assert outcome.status == "failed", verdict.report()
    assert outcome.result.note.endswith("ran through Dynamo's eager fallback")
    assert "dynamo:perturbed vs eager: forward out:f0.0: outside tolerance" in verdict.report()
    assert torch.is_grad_enabled()
