"""The torch.func entries' triggers against real runs: where the structure says the bug happens,
the path shows the bug's own witness, and where it does not, the path runs."""

from __future__ import annotations

import pytest

from harness import paths
from harness.build import build
from harness.known_issues import by_ids
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

APPLY_TEMPLATE = "func-dynamo-vmap-grad-apply-template"


def _doubling(*args: Arg, **changes) -> FunctionSpec:
    """2 * args[0] (+ the other tensor arguments), generate_vmap_rule, plain style."""
    terms = (Term(0, "linear", 2.0),) + tuple(Term(s, "linear", 1.0) for s in range(1, len(args)))
    return FunctionSpec(args=args, outputs=(OutputSpec(terms=terms),), style="setup_context", code="plain",
                        vmap=True, tuple_output=False, **changes)


def _graph(*functions: FunctionSpec, x1_requires_grad: bool = True, backward: str = "backward",
           views: int = 0) -> GraphSpec:
    return GraphSpec(shape=(3,), dtype="float64", functions=functions, backward=backward,
                     leaves=(LeafSpec(views=views), LeafSpec(requires_grad=x1_requires_grad)))


@pytest.mark.parametrize("spec, raises", [
    (_graph(_doubling(Arg("x0"))), False),  # a transform input reads requires_grad=False: inlined
    (_graph(_doubling(Arg("x0", clone=True))), True),  # computed inside grad from x0
    (_graph(_doubling(Arg("x0[1]")), views=2), True),  # a view of x0, made inside
    (_graph(_doubling(Arg("x1", clone=True)), _doubling(Arg("x0")), x1_requires_grad=False), False),  # x1: not
    # differentiated
    (_graph(_doubling(Arg("x0")), _doubling(Arg("f0.0"))), True),  # the first one's output, inlined
    (_graph(_doubling(Arg("x0"), jvp=True), _doubling(Arg("f0.0"))), True),  # F0 inlined: its jvp is ignored
    (_graph(_doubling(Arg("x0"), untraceable="print"), _doubling(Arg("f0.0"))), False),  # F0's print breaks first
    (_graph(_doubling(Arg("x0", clone=True), jvp=True)), False),  # the op would be made: its jvp breaks first
    (_graph(_doubling(Arg("x0"), grad_mode="no_grad"), _doubling(Arg("f0.0"), Arg("x1"))), False),
    (_graph(_doubling(Arg("x1", clone=True)), x1_requires_grad=False, backward="none"), True),  # vjp: every leaf
], ids=["leaf", "clone", "view", "undifferentiated-clone", "output", "inlined-jvp-first", "print-first",
        "jvp-breaks", "no-grad-first", "no-backward"])
def test_apply_template_trigger_matches_the_real_error(spec, raises):
    issue = by_ids([APPLY_TEMPLATE])[0]
    assert issue.triggered(spec, "func.vmap_grad+dynamo") == raises
    result = paths.run_path(paths.get("func.vmap_grad+dynamo"), build(spec))
    assert issue.witness(spec, result, []) == (raises and issue.affects_installed_torch()), result.describe_error()
    if not raises:
        assert result.status != "error", result.describe_error()


def test_apply_template_on_grad_vmap_only_where_its_forward_runs_under_vmap_of_vjp():
    """func.grad_vmap+dynamo runs grad(vmap), which compiles; where eager runs no backward its
    forward runs under vmap(vjp), which does not."""
    issue = by_ids([APPLY_TEMPLATE])[0]
    path = paths.get("func.grad_vmap+dynamo")
    for backward, raises in (("backward", False), ("none", True)):
        spec = _graph(_doubling(Arg("x0", clone=True)), backward=backward)
        assert issue.triggered(spec, path.name) == raises
        result = paths.run_path(path, build(spec))
        assert issue.witness(spec, result, []) == (raises and issue.affects_installed_torch()), backward


def test_apply_template_workaround_is_checked_under_dynamo_s_fallback():
    from harness.check import check

    spec = _graph(_doubling(Arg("x0", clone=True)), _doubling(Arg("f0.0"), Arg("x1")))
    outcome = check(spec, paths.parse("eager,func.vmap_grad+dynamo")).outcomes["func.vmap_grad+dynamo"]
    assert (outcome.status, outcome.known) == ("ok", (APPLY_TEMPLATE,)), outcome
    assert outcome.checked_spec.functions[0].untraceable == "print"
    assert "eager fallback" in outcome.result.note


NEEDS_INPUT_GRAD = "func-dynamo-needs-input-grad-of-transform-input"


@pytest.mark.parametrize("args, needs_input_grad, dropped", [
    ((Arg("x0"), Arg("x0", clone=True)), "read", True),  # x0 as is, beside a tensor computed from it
    ((Arg("x0"), Arg("x0", clone=True)), "ignore", False),  # the backward returns every gradient
    ((Arg("x0", clone=True), Arg("x0", clone=True)), "read", False),  # every input computed: seen as is
    ((Arg("x0"), Arg("x1")), "read", False),  # no input seen requiring grad: inlined, its backward dropped
], ids=["as-is-beside-computed", "ignored", "all-computed", "inlined"])
def test_needs_input_grad_trigger_matches_the_real_wrong_gradient(monkeypatch, args, needs_input_grad, dropped):
    from harness import known_issues
    from harness.check import check

    spec = _graph(_doubling(*args, needs_input_grad=needs_input_grad))
    issue = by_ids([NEEDS_INPUT_GRAD])[0]
    assert issue.triggered(spec, "func.grad+dynamo") == dropped
    names = "eager,func.grad+dynamo,func.vjp+dynamo"
    outcomes = check(spec, paths.parse(names), lifetimes=False).outcomes
    for name in ("func.grad+dynamo", "func.vjp+dynamo"):
        assert outcomes[name].status == "ok", outcomes[name]
        assert (NEEDS_INPUT_GRAD in outcomes[name].known) == dropped, outcomes[name]
    # without the entry: the gradient of x0, and only that, is wrong where it says
    monkeypatch.setattr(known_issues, "KNOWN_ISSUES", tuple(k for k in known_issues.KNOWN_ISSUES
                                                           if k.id != NEEDS_INPUT_GRAD))
    raw = check(spec, paths.parse(names), lifetimes=False).outcomes
    for name in ("func.grad+dynamo", "func.vjp+dynamo"):
        if dropped:
            assert raw[name].status == "failed"
            assert {(m.checkpoint, m.role) for m in raw[name].mismatches} == {("backward", "grad:x0")}, raw[name]
        else:
            assert raw[name].status == "ok", raw[name]


@pytest.mark.parametrize("entry, changes, computed, path", [
    ("dynamo-function-backward-checked-differently", dict(error="grad_count"), True, "func.grad+dynamo"),
    ("dynamo-function-backward-checked-differently", dict(error="grad_count"), False, "func.grad+dynamo"),
    ("dynamo-function-backward-checked-differently", dict(error="grad_count"), True, "func.vmap_grad+dynamo"),
    ("dynamo-function-backward-checked-differently", dict(error="grad_shape"), True, "func.vjp+dynamo"),
    ("dynamo-single-non-differentiable-output", dict(tuple_output=False), True, "func.grad+dynamo"),
    ("dynamo-single-non-differentiable-output", dict(tuple_output=False), False, "func.grad+dynamo"),
], ids=["too-few", "too-few-inlined", "too-few-under-vmap", "wrong-shape", "single-marked", "single-marked-inlined"])
def test_dynamo_entries_on_func_paths_where_dynamo_makes_the_op(entry, changes, computed, path):
    """Dynamo's errors in making a Function its autograd_function_apply op show on the func+dynamo
    paths where it makes one: a tensor computed inside the transform is passed (an inlined Function
    has its backward dropped instead: func-dynamo-custom-rules-dropped)."""
    marked = "tuple_output" in changes
    fn = FunctionSpec(args=(Arg("x0", clone=computed), Arg("x1")),
                      outputs=(OutputSpec(terms=(Term(0, "linear", 2.0), Term(1, "linear", 1.0)),
                                          non_differentiable=marked),) + (() if marked else (OutputSpec(
                                              terms=(Term(1, "linear", 3.0),)),)),
                      style="setup_context", code="plain", vmap=True, **changes)
    spec = _graph(fn, *((_doubling(Arg("x0"), Arg("x1")),) if marked else ()))
    issue = by_ids([entry])[0]
    assert issue.triggered(spec, path) == computed
    result = paths.run_path(paths.get(path), build(spec))
    if computed:
        assert result.status == "error" and result.error_checkpoint == "forward", result.describe_error()
        assert issue.witness(spec, result, _error_mismatch(result)), result.describe_error()
    else:
        assert result.status != "error" or result.error_checkpoint != "forward", result.describe_error()


def _error_mismatch(result):
    """The mismatch check.py reports for an error at forward where eager raised none."""
    from harness.oracles.compare import Mismatch

    return [Mismatch(result.path, "eager", "forward", "error", f"{result.path} raised {result.describe_error()}")]


@pytest.mark.parametrize("computed, code, raises", [(True, "generic", True), (True, "plain", False),
                                                    (False, "generic", False)],
                         ids=["made-an-op", "made-an-op-plain", "inlined"])
def test_clear_saved_tensors_on_func_paths_where_dynamo_set_out_to_make_the_op(computed, code, raises):
    """dynamo-clear-saved-tensors-with-jvp on func.grad+dynamo: Dynamo sets out to make a Function
    with a jvp an autograd_function_apply op (a tensor computed inside the transform is passed),
    breaks the graph at the jvp, and where the Function is generic its eager fallback reads
    ctx.saved_tensors twice; a plain one runs, and so does one passed the transform input as is
    (inlined)."""
    fn = FunctionSpec(args=(Arg("x0", clone=computed),), outputs=(OutputSpec(terms=(Term(0, "sin", 1.5),)),),
                      style="setup_context", code=code, vmap=True, tuple_output=False, save=("inputs",),
                      jvp=True, clear_saved_tensors_on_access=True)
    spec = _graph(fn)
    issue = by_ids(["dynamo-clear-saved-tensors-with-jvp"])[0]
    assert issue.triggered(spec, "func.grad+dynamo") == raises
    result = paths.run_path(paths.get("func.grad+dynamo"), build(spec))
    assert issue.witness(spec, result, []) == (raises and issue.affects_installed_torch()), result.describe_error()
    if not raises:
        assert result.status != "error", result.describe_error()
