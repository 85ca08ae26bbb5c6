"""Trace accounting: how each Function ran under torch.compile (harness/paths/tracing.py), the
straight-line forward it is read from, and its counts in campaign summaries and JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness import plain
from harness.build import build
from harness.results import PathCounts
from harness.check import check
from harness.paths.dynamo import dynamo_path
from harness.paths.func import PATHS as FUNC_PATHS
from harness.paths.tracing import example_trace
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

_SIN = OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(1, "linear", 2.0)))


def _plain(*args: Arg, **kw) -> FunctionSpec:
    return FunctionSpec(args=args, outputs=kw.pop("outputs", (_SIN,)), save=("inputs",), code="plain", **kw)


def _graph(*functions: FunctionSpec, forward_code: str = "straight", requires_grad: bool = True) -> GraphSpec:
    return GraphSpec(shape=(3,), leaves=(LeafSpec(requires_grad=requires_grad), LeafSpec(requires_grad=requires_grad)),
                     functions=functions, backward="backward", forward_code=forward_code)


TRACEABLE = _graph(_plain(Arg("x0"), Arg("x1")), _plain(Arg("f0.0"), Arg("x1")))
# F0 has a user jvp: Dynamo breaks the graph there and runs it eagerly; F1 is still traced
ONE_JVP = _graph(_plain(Arg("x0"), Arg("x1"), jvp=True), _plain(Arg("f0.0"), Arg("x1")))


def _trace(spec: GraphSpec) -> dict:
    result = dynamo_path("aot_eager").run(build(spec))
    assert result.status == "ok", result.describe_error()
    return result.trace


def test_traceable_functions_are_traced_into_the_function_op():
    assert _trace(TRACEABLE) == {"ways": ["traced", "traced"], "example": "traced"}


def test_a_function_dynamo_cannot_trace_ran_eagerly_and_the_example_is_partly_traced():
    assert _trace(ONE_JVP) == {"ways": ["eager", "traced"], "example": "partly traced"}


def test_with_every_function_eager_the_example_is_a_fallback():
    spec = _graph(_plain(Arg("x0"), Arg("x1"), jvp=True), _plain(Arg("f0.0"), Arg("x1"), jvp=True))
    assert _trace(spec) == {"ways": ["eager", "eager"], "example": "fallback"}


def test_a_function_no_input_of_which_requires_grad_is_inlined():
    assert _trace(_graph(_plain(Arg("x0"), Arg("x1")), requires_grad=False)) == {
        "ways": ["inlined"], "example": "inlined"}


def test_the_loop_form_counts_the_function_ops():
    loop = GraphSpec(**{**TRACEABLE.__dict__, "forward_code": "loop"})
    assert _trace(loop) == {"ways": ["traced", "traced"], "example": "traced"}
    assert _trace(GraphSpec(**{**ONE_JVP.__dict__, "forward_code": "loop"}))["example"] == "partly traced"


def test_example_trace_classes():
    assert example_trace(("traced", "inlined")) == "traced"
    assert example_trace(("traced", "unknown")) == "partly traced"
    assert example_trace(("eager", "inlined")) == "fallback"
    assert example_trace(("inlined",)) == "inlined"


def test_func_dynamo_paths_record_the_trace_too():
    spec = GraphSpec(**{**TRACEABLE.__dict__, "functions": tuple(
        FunctionSpec(**{**fn.__dict__, "style": "setup_context"}) for fn in TRACEABLE.functions)})
    result = FUNC_PATHS["func.grad+dynamo"].run(build(spec))
    assert result.status == "ok", result.describe_error()
    # in the graph, whether traced or inlined (func-dynamo-custom-rules-dropped: a transform's inlining)
    assert len(result.trace["ways"]) == 2 and set(result.trace["ways"]) <= {"traced", "inlined"}, result.trace


def test_the_straight_line_forward_is_the_graph_as_a_user_writes_it():
    spec = _graph(
        _plain(Arg("x0"), Arg(const=(1, None)), Arg("x1", clone=True),
               outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(2, "linear", 2.0))),)),
        FunctionSpec(args=(Arg("f0.0", clone=True, view=True),), outputs=(OutputSpec("dirty", slot=0, coeff=2.0),),
                     tuple_output=False, code="plain", dirty_return="input"))
    source = plain.graph_forward_source(spec)
    assert source.text == (
        "def graph_forward(x0, x1):\n"
        "    c0_2 = x1.clone()\n"
        "    (f0_0,) = F0.apply(x0, (1, None), c0_2)\n"
        "    c1_0 = f0_0.clone()\n"
        "    c1_0_view = c1_0.view_as(c1_0)\n"
        "    f1_0 = F1.apply(c1_0_view)\n"
        "    return (f0_0, f1_0)\n")
    assert source.apply_lines == {3: 0, 6: 1}
    # and it computes what the interpreter loop does, on every path it serves
    verdict = check(spec, [dynamo_path("aot_eager")], lifetimes=True)
    assert verdict.outcomes["dynamo:aot_eager"].status == "ok", verdict.report()


def test_path_counts_keep_the_trace_counts_through_json():
    counts = PathCounts()
    for trace, backward in [("traced", True), ("traced", True), ("partly traced", True), ("fallback", False)]:
        counts.add({"status": "ok", "trace": trace}, backward=backward)
    counts.add({"status": "unsupported", "reason": "r"})  # no trace: not counted
    assert counts.traces == {"traced": 2, "partly traced": 1, "fallback": 1}
    assert counts.trace_lines() == [
        "how Dynamo ran the Functions: traced 2 (50%), partly traced 1 (25%), fallback 1 (25%), inlined 0 (0%)",
        "of the 3 with a backward: every Function traced 67%, at least one 100%"]
    again = PathCounts.from_json(json.loads(json.dumps(counts.as_json())))
    assert again == counts and again.traces_with_backward == {"traced": 2, "partly traced": 1}


def test_a_campaign_shows_how_dynamo_ran_the_functions(tmp_path):
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager,dynamo", "--max-examples", "12",
                           "--budget", "300s", "--out", str(tmp_path), "--json", str(tmp_path / "s.json")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    assert "how Dynamo ran the Functions: traced" in done.stdout, done.stdout
    trace = json.loads((tmp_path / "s.json").read_text())["paths"]["dynamo"]["trace"]
    assert sum(trace.get(k, 0) for k in ("traced", "partly traced", "fallback", "inlined")) >= 1, trace
    assert "How Dynamo ran the Functions" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("field,value", [("forward_code", "loops"), ("functions", "dirty_return")])
def test_bad_values_of_the_new_fields_are_one_clear_sentence(field, value):
    from harness.spec import SpecError
    with pytest.raises(SpecError, match="choose one of"):
        if field == "forward_code":
            GraphSpec(forward_code=value)
        else:
            GraphSpec(leaves=(LeafSpec(),), functions=(FunctionSpec(dirty_return="as is"),))
