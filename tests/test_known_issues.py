"""Every known torch issue still reproduces on the torch versions it names, so a fixed
bug gets noticed (and its entry narrowed)."""

import dataclasses
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from harness import paths
from harness.check import check
from harness.known_issues import KNOWN_ISSUES, REPRODUCERS, reproduce
from harness.spec import Arg, FunctionSpec, GraphSpec, HookSpec, LeafSpec, OutputSpec, Term
from strategies import graphs

ROOT = Path(__file__).resolve().parent.parent  # the checkout: docs/ and the spec files


@pytest.mark.parametrize("issue", KNOWN_ISSUES, ids=lambda k: k.id)
def test_known_issue_reproduces_where_it_says(issue):
    """present where the registry's first..last versions include this torch, fixed elsewhere;
    a reproducer that fails some other way ("broken") fails this test either way."""
    assert (REPRODUCERS / issue.reproducer).exists(), f"{issue.id}: reproducer is missing"
    state, last_line = reproduce(issue)
    expected = "present" if issue.affects_installed_torch() else "fixed"
    assert state == expected, last_line


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs())
def test_every_workaround_is_a_valid_spec_without_its_trigger(spec):
    """A workaround is what the harness checks past a known issue, so it must be a spec the
    paths can run (a CI run once found one that left a view of an argument it no longer
    cloned) and it must avoid the structure the bug needs on every path the entry names."""
    for issue in KNOWN_ISSUES:
        fired_on = [p for p in issue.paths if issue.triggered(spec, p)]
        if not fired_on:
            continue
        variant = issue.workaround(spec)  # validates: GraphSpec checks itself when built
        if variant != spec:
            still = [p for p in fired_on if issue.triggered(variant, p)]
            assert not still, f"{issue.id}: its workaround still triggers it on {still}"


def test_known_rates_prints_each_entrys_share(capsys):
    from harness.cli import main

    assert main(["known", "--rates", "--examples", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for issue in KNOWN_ISSUES:
        assert any(line.split()[1:2] == [issue.id] and line.split()[0].endswith("%") for line in lines), issue.id


def test_known_rates_shares_are_the_counts(tmp_path, capsys, monkeypatch):
    """Not the format only: the trigger share is the share of the
    generated specs whose structure triggers the entry, and with --campaign the second column is the
    share of that campaign's examples where the entry explained a mismatch (from its log)."""
    import json

    from harness import known_issues
    from harness.cli import main

    first, second = KNOWN_ISSUES[0], KNOWN_ISSUES[1]
    # (the trigger shares as trigger_rates gives them: every spec triggers the first, none the second)
    monkeypatch.setattr(known_issues, "trigger_rates", lambda examples: [
        (k, 1.0 if k is first else 0.0 if k is second else 0.25) for k in KNOWN_ISSUES])
    campaign = tmp_path / "campaign"
    campaign.mkdir()
    records = [{"kind": "start", "t": 0.0}] + [
        {"kind": "example", "t": 1.0, "outcomes": {"eager": {"status": "ok"},
                                                    # (one example explained on two paths counts once)
                                                    "dynamo": {"status": "partly", "known": [first.id]} if i < 3
                                                    else {"status": "ok"}}} for i in range(4)]
    (campaign / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["known", "--rates", "--examples", "4", "--campaign", str(campaign)]) == 0
    rows = {line.split()[2]: line.split()[:2] for line in capsys.readouterr().out.splitlines()
            if line[:1] == " " and "damages:" in line}
    assert rows[first.id] == ["100.0%", "75.0%"]
    assert rows[second.id] == ["0.0%", "0.0%"]
    assert rows[KNOWN_ISSUES[2].id] == ["25.0%", "0.0%"]


def test_campaign_gradcheck_steps_around_known_issues_its_own_backward_triggers():
    """gradcheck runs a backward over every leaf even for a spec without one (backward="none"):
    the known issues are judged on the spec as gradcheck runs it. This spec hits
    eager-dirty-view-not-first-input's INTERNAL ASSERT under a raw gradcheck (an audit campaign's
    worker died on it); the campaign's gradcheck checks its workaround instead."""
    from harness.check import gradcheck_verdict
    from harness.oracles.math import GradcheckRaised, gradcheck_graph
    from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec

    spec = GraphSpec(shape=(3,), leaves=(LeafSpec(False), LeafSpec()), backward="none", functions=(
        FunctionSpec(args=(Arg("x0"), Arg("x1", clone=True, view=True)),
                     outputs=(OutputSpec("dirty", slot=1, coeff=2.0),), tuple_output=False),))
    with pytest.raises(GradcheckRaised, match="INTERNAL ASSERT"):
        gradcheck_graph(spec)
    assert gradcheck_verdict(spec) == ("ok", "")


def test_an_error_inside_the_campaign_gradcheck_is_a_failure_not_a_crash(monkeypatch):
    """torch raising inside gradcheck is a finding about the checked code; the harness failing to
    prepare the check (building the graph) is the harness's own error, never a finding or a pass."""
    import torch

    from harness import check
    from harness.oracles import math
    from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

    def raising(*args, **kwargs):
        raise RuntimeError("an engine error")
    spec = GraphSpec(shape=(2,), leaves=(LeafSpec(),), functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "linear", 2.0),)),), tuple_output=False),))
    with monkeypatch.context() as patched:
        patched.setattr(torch.autograd, "gradcheck", raising)
        assert check.gradcheck_verdict(spec) == ("failed", "gradcheck raised RuntimeError: an engine error")
    monkeypatch.setattr(math, "build", raising)
    with pytest.raises(RuntimeError, match="an engine error"):
        check.gradcheck_verdict(spec)


def test_gradcheck_with_no_differentiable_output_is_skipped_not_ok():
    """Every output of F0 is marked non-differentiable: nothing reaches gradcheck, so nothing is compared."""
    from harness.check import gradcheck_verdict
    from harness.oracles.math import OracleError, gradcheck_graph, gradcheck_reason
    from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

    spec = GraphSpec(shape=(2,), leaves=(LeafSpec(),), functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "linear", 2.0),), non_differentiable=True),),
                     tuple_output=False),))
    assert gradcheck_reason(spec) == "no differentiable output reaches gradcheck (nothing to compare)"
    assert gradcheck_verdict(spec) == ("skipped", gradcheck_reason(spec))
    with pytest.raises(OracleError, match="no differentiable output"):
        gradcheck_graph(spec)


# --- a known crash: not run, the rest checked on its workaround -------------------------------

#: x0 has two views; F0 reads x0[0] and returns a tensor that does not depend on it, so its
#: backward returns None for it; x0[0] has retain_grad(): compiled autograd segfaults
RETAINED_WITHOUT_GRADIENT = GraphSpec(
    shape=(3,), dtype="float32", leaves=(LeafSpec(views=2),), backward="backward",
    hooks=(HookSpec("retain_grad", target="x0[0]"),),
    functions=(FunctionSpec(args=(Arg("x0[0]"), Arg("x0[1]")), outputs=(
        OutputSpec(terms=(Term(1, "linear", 2.0),)),)),))

_RUN_UNGUARDED = """
import sys
from harness.build import build
from harness.paths import get
from harness.spec import GraphSpec
result = get("compiled").run(build(GraphSpec.from_json(sys.stdin.read())))
print(result.status)
"""


def test_a_known_crash_is_not_run_and_the_rest_is_checked_on_its_workaround():
    issue = "ca-retain-grad-none-gradient-segfault"
    if not next(k for k in KNOWN_ISSUES if k.id == issue).affects_installed_torch():
        pytest.skip(f"{issue} is fixed in this torch: the example runs")
    outcome = check(RETAINED_WITHOUT_GRADIENT, [paths.get("compiled")]).outcomes["compiled"]
    assert outcome.status == "ok" and issue in outcome.known, outcome
    assert outcome.checked_spec.hooks == () and outcome.result.tensors["backward"]  # the variant ran its backward
    # the structure the trigger names really crashes: the path run directly, in a child process
    child = subprocess.run([sys.executable, "-c", _RUN_UNGUARDED], input=RETAINED_WITHOUT_GRADIENT.to_json(),
                           capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert child.returncode == -signal.SIGSEGV, (child.returncode, child.stdout, child.stderr[-2000:])
    # and the same graph whose retained view gets a gradient runs
    fed = dataclasses.replace(RETAINED_WITHOUT_GRADIENT, functions=(dataclasses.replace(
        RETAINED_WITHOUT_GRADIENT.functions[0], outputs=(OutputSpec(terms=(Term(0, "linear", 1.0), Term(1, "linear", 2.0))),)),))
    assert check(fed, [paths.get("compiled")]).outcomes["compiled"].status == "ok"


# --- ca-tensor-hook-unreached-output: the trigger's edge on real compiled-autograd runs ------

#: a double backward that enters F0 only through f0.0 (F1's square reads it, from its saved input)
ENTERS_F0_THROUGH_ITS_FIRST_OUTPUT = GraphSpec(
    shape=(3,), dtype="float64", leaves=(LeafSpec(),), backward="double", functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "linear", 2.0),)),
                                                 OutputSpec(terms=(Term(0, "linear", 1.5),)))),
        FunctionSpec(args=(Arg("f0.0"),), outputs=(OutputSpec(terms=(Term(0, "square", 1.5),)),),
                     save=("inputs",), tuple_output=False)))


@pytest.mark.parametrize("hooked, checkpoint, raises", [
    ("f0.1", False, True),  # F0's node runs in the second backward, no edge reaches f0.1
    ("f0.0", False, False),  # the edge the second backward enters by
    ("f0.1", True, False),  # the second backward runs the checkpoint's recomputed nodes, not hooked
], ids=["unreached", "reached", "checkpoint"])
def test_ca_tensor_hook_unreached_output_trigger_matches_the_real_error(hooked, checkpoint, raises):
    from harness.build import build

    issue = next(k for k in KNOWN_ISSUES if k.id == "ca-tensor-hook-unreached-output")
    spec = dataclasses.replace(ENTERS_F0_THROUGH_ITS_FIRST_OUTPUT, hooks=(HookSpec("tensor", hooked),),
                               checkpoint=checkpoint)
    assert issue.triggered(spec, "compiled") == raises
    result = paths.get("compiled").run(build(spec))
    if issue.affects_installed_torch():
        assert issue.witness(spec, result, []) == raises, result.describe_error()
    assert result.status == ("error" if raises and issue.affects_installed_torch() else "ok"), result.describe_error()


# --- ca-none-gradient-accumulated in the second backward: the trigger's edge on real runs --

#: F1 squares f0.0 (its saved input): the second backward reaches F0 through f0.0 only
SQUARES_F00 = FunctionSpec(args=(Arg("f0.0"),), outputs=(OutputSpec(terms=(Term(0, "square", 1.5),)),),
                           save=("inputs",), tuple_output=False)


def _both_as_is(*refs: str, views: int = 0, materialize_grads: bool = False, unused_grad: str = "none",
                then: tuple[FunctionSpec, ...] = (SQUARES_F00,)) -> GraphSpec:
    """F0 returns its two inputs as-is; a double backward."""
    leaves = 1 + any(r.startswith("x1") for r in refs)
    return GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(views=views),) * leaves, backward="double",
                     functions=(FunctionSpec(args=tuple(Arg(r) for r in refs),
                                             outputs=(OutputSpec("input", slot=0), OutputSpec("input", slot=1)),
                                             materialize_grads=materialize_grads, unused_grad=unused_grad),) + then)


@pytest.mark.parametrize("spec, raises", [
    (_both_as_is("x0", "x0"), True),  # F0 gets None for f0.1, returns None for x0's second edge
    (_both_as_is("x0", "x0", materialize_grads=True), False),  # zeros for the unreached f0.1
    (_both_as_is("x0", "x0", unused_grad="zeros"), False),
    (_both_as_is("x0", "x1"), False),  # x1 gets only the None
    (_both_as_is("x0[0]", "x0[1]", views=2), True),  # the view passes its None on to x0
    (_both_as_is("x0[0]", "x0[0]", views=1), True),
    (_both_as_is("x0", "x0", then=(FunctionSpec(  # F1 reads f0.1 too, by a linear term: no saved input
        args=(Arg("f0.0"), Arg("f0.1")), outputs=(OutputSpec(terms=(Term(0, "square", 1.5), Term(1, "linear", 1.0))),),
        save=("inputs",), tuple_output=False),)), True),
    (_both_as_is("x0", "x0", then=(FunctionSpec(  # only f0.1, by a linear term: F0 does not run again
        args=(Arg("f0.1"),), outputs=(OutputSpec(terms=(Term(0, "linear", 1.5),)),), tuple_output=False),)), False),
    # F1 (materialize_grads=False) passes None on to f0.1; F0 gets it at run time, where compiled
    # autograd does not materialize it although F0 has materialize_grads=True
    (_both_as_is("x0", "x0", materialize_grads=True, then=(
        FunctionSpec(args=(Arg("f0.0"), Arg("f0.1")), outputs=(OutputSpec("input", slot=0), OutputSpec("input", slot=1)),
                     materialize_grads=False),
        dataclasses.replace(SQUARES_F00, args=(Arg("f1.0"),)))), True),
    # generic F0 (harness/generic.py) skips the None F1 sends to f0.1 and still returns f0.0's
    # gradient for both x0 slots (plain F0 raises ca-runtime-none-not-materialized's TypeError)
    (dataclasses.replace(_both_as_is("x0", "x0", materialize_grads=True), functions=(
        FunctionSpec(args=(Arg("x0"), Arg("x0")), outputs=(
            OutputSpec(terms=(Term(0, "linear", 2.0), Term(1, "linear", 1.0))), OutputSpec(terms=(Term(0, "linear", 3.0),)))),
        FunctionSpec(args=(Arg("f0.0"), Arg("f0.1")), outputs=(OutputSpec("input", slot=0), OutputSpec("input", slot=1)),
                     materialize_grads=False),
        dataclasses.replace(SQUARES_F00, args=(Arg("f1.0"),)))), False),
], ids=["same-leaf", "materialized", "zeros-for-unused", "two-leaves", "two-views", "one-view-twice",
        "reads-both", "not-reached", "runtime-none", "generic-skips-runtime-none"])
def test_ca_none_gradient_accumulated_second_backward_trigger_matches_the_real_error(spec, raises):
    from harness.build import build

    issue = next(k for k in KNOWN_ISSUES if k.id == "ca-none-gradient-accumulated")
    assert issue.triggered(spec, "compiled") == raises
    result = paths.get("compiled").run(build(spec))
    if issue.affects_installed_torch():
        assert issue.witness(spec, result, []) == raises, result.describe_error()
        assert result.status == ("error" if raises else "ok"), result.describe_error()
        if raises:
            assert result.error_checkpoint == "double_backward"
    if raises:  # and the workaround runs on the path
        assert paths.get("compiled").run(build(issue.workaround(spec))).status == "ok"


def test_the_compiled_double_backward_audit_spec_is_checked_past_ca_none_gradient_accumulated():
    """The compiled-path audit's spec (docs/func_repros/): checked on its workaround variant."""
    from harness.spec import load_spec

    spec = load_spec(str(ROOT / "docs/func_repros/compiled_double_backward_none_added_213.json"))
    outcome = check(spec, [paths.get("compiled")]).outcomes["compiled"]
    issue = next(k for k in KNOWN_ISSUES if k.id == "ca-none-gradient-accumulated")
    if issue.affects_installed_torch():
        assert outcome.status == "ok" and issue.id in outcome.known, outcome.reason
        assert outcome.result.tensors["double_backward"]  # the variant ran its second backward
    else:
        assert outcome.status == "ok", outcome.reason


# --- ca-prehook-unused-first-gradient: the double backward's form on real compiled-autograd runs --


@pytest.mark.parametrize("entered_by, checkpoint, raises", [
    ("f0.1", False, True),  # F0's node runs in the second backward, no edge reaches f0.0
    ("f0.0", False, False),  # the second backward enters by the first output
    ("f0.1", True, False),  # the second backward runs the checkpoint's recomputed nodes, not hooked
], ids=["first-unreached", "first-reached", "checkpoint"])
def test_ca_prehook_unused_first_gradient_trigger_matches_the_real_error_in_a_double_backward(
        entered_by, checkpoint, raises):
    from harness.build import build

    issue = next(k for k in KNOWN_ISSUES if k.id == "ca-prehook-unused-first-gradient")
    square = dataclasses.replace(ENTERS_F0_THROUGH_ITS_FIRST_OUTPUT.functions[1], args=(Arg(entered_by),))
    spec = dataclasses.replace(ENTERS_F0_THROUGH_ITS_FIRST_OUTPUT, hooks=(HookSpec("pre", "f0.1"),),
                               checkpoint=checkpoint,
                               functions=(ENTERS_F0_THROUGH_ITS_FIRST_OUTPUT.functions[0], square))
    assert issue.triggered(spec, "compiled") == raises
    result = paths.get("compiled").run(build(spec))
    if issue.affects_installed_torch():
        assert issue.witness(spec, result, []) == raises, result.describe_error()
    assert result.status == ("error" if raises and issue.affects_installed_torch() else "ok"), result.describe_error()


# --- func-dynamo-jvp-view-of-gapped-primal: the trigger's edge on real func.jvp+dynamo runs --

def _reading_a_view_of_x0(leaf: LeafSpec, shape: tuple[int, ...]) -> GraphSpec:
    """A Function reads x0[0], a view of leaf x0 (2 views), under forward AD."""
    return GraphSpec(shape=shape, dtype="float64", leaves=(leaf,), forward_ad=True, functions=(
        FunctionSpec(args=(Arg("x0[0]"),), outputs=(OutputSpec(terms=(Term(0, "linear", 2.0),)),),
                     style="setup_context", code="plain", tuple_output=False, jvp=True),))


@pytest.mark.parametrize("layout, shape, raises", [
    ("strided", (3,), True),  # every other of 6 columns
    ("strided", (1,), True),  # one column of 2: shape (2, 1), strides (2, 2) (a campaign spec on 2.14.1)
    ("strided", (), True),  # shape (2,), stride (2,)
    ("strided", (0,), False),  # empty
    ("transposed", (3, 1), False),  # strides (1, 3), unlike the tangent's, over exactly its own elements
], ids=["three-columns", "one-column", "0-dim-views", "empty", "transposed"])
def test_func_dynamo_jvp_view_of_gapped_primal_trigger_matches_the_real_error(layout, shape, raises):
    from harness.build import build
    from harness.known_issues import torch_release

    issue = next(k for k in KNOWN_ISSUES if k.id == "func-dynamo-jvp-view-of-gapped-primal")
    spec = _reading_a_view_of_x0(LeafSpec(layout=layout, views=2), shape)
    assert issue.triggered(spec, "func.jvp+dynamo") == raises
    if torch_release() < (2, 14, 0):
        pytest.skip("torch 2.13's Dynamo breaks the graph at a Function with a jvp: the harness does not reach it")
    result = paths.run_path(paths.get("func.jvp+dynamo"), build(spec))
    seen = issue.witness(spec, result, [])
    assert seen == (raises and issue.affects_installed_torch()), result.describe_error()


# --- ca-runtime-none-not-materialized: the trigger's edge on real compiled-autograd runs -----

#: F0's two outputs, from x0 alone or each from its own leaf (x0 and x1)
COMPUTED_FROM_X0 = (OutputSpec(terms=(Term(0, "linear", 2.0),)), OutputSpec(terms=(Term(0, "linear", 3.0),)))
COMPUTED_EACH_FROM_ITS_OWN = (OutputSpec(terms=(Term(0, "linear", 2.0),)), OutputSpec(terms=(Term(1, "linear", 3.0),)))
AS_IS = (OutputSpec("input", slot=0), OutputSpec("input", slot=1))


def _f1_passes_none_to_f01(outputs: tuple[OutputSpec, ...], code: str = "plain", materialize_grads: bool = True,
                           unused_grad: str = "none", f1_reads: tuple[str, ...] = ("f0.0", "f0.1")) -> GraphSpec:
    """F0 (the receiver) -> F1 (returns its inputs as-is, materialize_grads=False) -> F2 squares
    f1.0 (its saved input). The second backward enters by f1.0 only, so F1 gets None for f1.1 and
    returns None along its edge into f0.1."""
    args = ("x0",) if outputs is COMPUTED_FROM_X0 else ("x0", "x1")
    return GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(),) * len(args), backward="double", functions=(
        FunctionSpec(args=tuple(Arg(a) for a in args), outputs=outputs, code=code, materialize_grads=materialize_grads),
        FunctionSpec(args=tuple(Arg(r) for r in f1_reads), outputs=AS_IS[:len(f1_reads)], materialize_grads=False,
                     unused_grad=unused_grad),
        dataclasses.replace(SQUARES_F00, args=(Arg("f1.0"),))))


@pytest.mark.parametrize("spec, triggered, seen", [
    # plain F0 multiplies the None it gets for f0.1: TypeError (eager gives it zeros)
    (_f1_passes_none_to_f01(COMPUTED_FROM_X0), True, "error"),
    (_f1_passes_none_to_f01(COMPUTED_EACH_FROM_ITS_OWN), True, "error"),
    # generic F0 skips the None: x1's second-order gradient is None, eager's zeros
    (_f1_passes_none_to_f01(COMPUTED_EACH_FROM_ITS_OWN, code="generic"), True, "dgrad"),
    # plain F0 passes the as-is output's None on to x1
    (_f1_passes_none_to_f01(AS_IS), True, "dgrad"),
    # generic F0 skips it, and x0 gets f0.0's gradient: nothing differs from eager
    (_f1_passes_none_to_f01(COMPUTED_FROM_X0, code="generic"), True, None),
    (_f1_passes_none_to_f01(COMPUTED_FROM_X0, materialize_grads=False), False, None),  # None in eager too
    (_f1_passes_none_to_f01(COMPUTED_FROM_X0, unused_grad="zeros"), False, None),  # F1 sends zeros
    (_f1_passes_none_to_f01(COMPUTED_FROM_X0, f1_reads=("f0.0",)), False, None),  # no edge into f0.1: zeros
    # a chain: F2 returns None for f1.1, which F1 (plain, materialize_grads=True) passes on as is to
    # F0's f0.1, which F0 (plain) multiplies; the workaround makes both F1 and F2 send zeros
    (dataclasses.replace(_f1_passes_none_to_f01(COMPUTED_FROM_X0), functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=COMPUTED_FROM_X0, code="plain"),
        FunctionSpec(args=(Arg("f0.0"), Arg("f0.1")), outputs=AS_IS, code="plain"),
        FunctionSpec(args=(Arg("f1.0"), Arg("f1.1")), outputs=AS_IS, materialize_grads=False),
        dataclasses.replace(SQUARES_F00, args=(Arg("f2.0"),)))), True, "error"),
], ids=["plain-times-none", "plain-own-leaves", "generic-none-to-leaf", "plain-as-is-none-to-leaf",
        "generic-other-gradient", "not-materialized", "zeros-sent", "not-reached", "chain"])
def test_ca_runtime_none_not_materialized_trigger_matches_the_real_runs(spec, triggered, seen):
    """`seen`: how the run shows it (the TypeError, or a None second-order gradient against
    eager's zeros), or None where it does not (the trigger is necessary, not sufficient)."""
    from harness.build import build

    issue = next(k for k in KNOWN_ISSUES if k.id == "ca-runtime-none-not-materialized")
    assert issue.triggered(spec, "compiled") == triggered
    present = issue.affects_installed_torch()
    result = paths.get("compiled").run(build(spec))
    assert result.status == ("error" if seen == "error" and present else "ok"), result.describe_error()
    if seen == "error" and present:
        assert result.error_checkpoint == "double_backward" and issue.witness(spec, result, [])
    outcome = check(spec, [paths.get("compiled")]).outcomes["compiled"]
    assert outcome.status == "ok", outcome.reason  # a run that shows it is checked on the workaround
    assert (issue.id in outcome.known) == (seen is not None and present), outcome.known
    if seen is not None and present:
        assert outcome.checked_spec == issue.workaround(spec) and outcome.result.tensors["double_backward"]


def test_the_runtime_none_spec_kept_in_func_repros_is_the_plain_case():
    """docs/known_issues.md points at it: the plain-times-none case above, kept as a spec file."""
    from harness.spec import load_spec

    kept = load_spec(str(ROOT / "docs/func_repros/compiled_runtime_none_not_materialized.json"))
    assert kept == _f1_passes_none_to_f01(COMPUTED_FROM_X0)


# --- eager-dirty-view-not-first-input: the misrouting cuts a saver off the given inputs -----------


def _saver_behind_dirty_view(backward="grad", grad_leaves=(), f1_reads=("f0.0",)):
    """F0 scales in place a view of x2 (no grad), its second tensor input; F1 reads F0's output and
    saves its own, which the user modifies in place after the forward; F2 reads x1. F1 leads to x0
    only through F0's first input, whose edge CopySlices replaces by x2's (no grad)."""
    lin = OutputSpec("compute", terms=(Term(0, "linear", 2.0),))
    return GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec(), LeafSpec(False)),
                     backward=backward, grad_leaves=grad_leaves, mutated_outputs=("f1.0",), functions=(
                         FunctionSpec(args=(Arg("x0"), Arg("x2", clone=True, view=True)),
                                      outputs=(OutputSpec("dirty", slot=1, coeff=2.0),), tuple_output=False),
                         FunctionSpec(args=tuple(Arg(r) for r in f1_reads), outputs=(lin,), save=("outputs",),
                                      tuple_output=False),
                         FunctionSpec(args=(Arg("x1"),), outputs=(lin,), tuple_output=False)))


@pytest.mark.parametrize("spec, skipped", [
    (_saver_behind_dirty_view(), True),  # autograd.grad over x0, x1
    (_saver_behind_dirty_view(backward="backward", grad_leaves=(0, 1)), True),  # backward(inputs=...)
    (_saver_behind_dirty_view(backward="backward"), False),  # no inputs: every node in the loss runs
    (_saver_behind_dirty_view(f1_reads=("f0.0", "x1")), False),  # F1 also leads to x1
], ids=["autograd-grad", "backward-inputs", "no-inputs", "saver-reads-x1"])
def test_eager_dirty_view_not_first_input_skipped_saver_matches_the_real_runs(spec, skipped):
    """The math oracle expects the version-counter error (F1's backward runs in the graph torch
    documents); eager and compiled autograd raise it exactly where the misrouted graph still runs
    F1, and are checked past the known issue where it does not."""
    from harness.build import build
    from harness.dataflow import VERSION_ERROR, version_error_expected
    from harness.known_issues.eager import _saved_mutated_outputs_never_unpacked

    issue = next(k for k in KNOWN_ISSUES if k.id == "eager-dirty-view-not-first-input")
    assert version_error_expected(spec) and issue.triggered(spec, "eager")
    assert _saved_mutated_outputs_never_unpacked(spec) == skipped
    present = issue.affects_installed_torch()
    for name in ("eager", "compiled"):
        result = paths.get(name).run(build(spec))
        assert result.status == ("ok" if skipped and present else "error"), result.describe_error()
        if result.status == "error":
            assert result.error_checkpoint == "backward" and VERSION_ERROR.search(str(result.error))
        outcome = check(spec, [paths.get(name)]).outcomes[name]
        assert outcome.status == "ok", outcome.reason
        assert (issue.id in outcome.known) == (skipped and present), outcome.known
        if skipped and present:  # the variant's gradients are compared (its outputs are not modified)
            assert outcome.checked_spec == issue.workaround(spec) and not outcome.checked_spec.mutated_outputs
            assert outcome.result.status == "ok" and outcome.result.tensors["backward"]


def test_the_compiled_audit_spec_without_the_version_error_is_checked_past_the_misrouting():
    """The compiled audit's spec (docs/func_repros/): F1 saves f1.0 and f1.3, which are
    modified in place, and leads to the only leaf that requires grad (x0) only through F0's first
    input; eager and compiled autograd skip F1 under autograd.grad alike (no compiled-autograd bug)."""
    from harness.spec import load_spec

    spec = load_spec(str(ROOT / "docs/func_repros/compiled_version_error_skipped_saver_916cb58f.json"))
    issue = next(k for k in KNOWN_ISSUES if k.id == "eager-dirty-view-not-first-input")
    verdict = check(spec, [paths.get("eager"), paths.get("compiled")])
    for outcome in verdict.outcomes.values():
        assert outcome.status == "ok", verdict.report()
        assert (issue.id in outcome.known) == issue.affects_installed_torch(), verdict.report()


def test_the_skipped_saver_script_kept_in_func_repros_reproduces_where_the_entry_says():
    """docs/known_issues.md points at it: plain torch, eager and compiled autograd alike."""
    issue = next(k for k in KNOWN_ISSUES if k.id == "eager-dirty-view-not-first-input")
    script = ROOT / "docs/func_repros/eager_dirty_view_skipped_saver.py"
    run = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == (1 if issue.affects_installed_torch() else 0), run.stdout + run.stderr
    assert ("REPRODUCED" in run.stdout) == issue.affects_installed_torch(), run.stdout


def test_the_vmap_out_dims_script_kept_in_func_repros_reproduces_on_torch_2_13():
    """docs/func.md, "Why out_dims stays 0": plain torch, no custom Function (pytorch/pytorch#178425,
    fixed by pytorch/pytorch#178495 after 2.13): the reason GraphSpec.batch_dim moves in_dims only."""
    script = ROOT / "docs/func_repros/vmap_out_dims_unbatched_output.py"
    run = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True,
                         timeout=300)
    present = torch.__version__.startswith("2.13.")
    if present:
        assert run.returncode == 1 and "REPRODUCED" in run.stdout, run.stdout + run.stderr
    else:  # a later torch: fixed there, or not; either way the script runs to its verdict
        assert run.returncode in (0, 1) and ("REPRODUCED" in run.stdout or "fixed" in run.stdout), run.stdout


# --- dynamo-fallback-drops-mark-non-differentiable: a skipped backward's deliberate error --------


@pytest.mark.parametrize("name", ["dynamo_fallback_skipped_backward_raises_68701d32.json",
                                  "dynamo_fallback_skipped_backward_raises_50eca82c.json",
                                  # F1 reads the output whose mark was lost: it has a node only
                                  # through it, and its backward returns a wrongly shaped gradient
                                  "dynamo_fallback_reader_of_lost_mark_raises_49deffdf.json"])
def test_the_dynamo_audit_specs_whose_lost_marks_run_an_invalid_backward_are_checked_past_it(name):
    """The dynamo audit's specs (docs/func_repros/): a Function whose one output is
    marked non-differentiable returns too few gradients on purpose. Eager never calls that
    backward; through Dynamo's eager fallback the mark is lost, so the backward runs and raises
    autograd's error. That error is the entry's damage, and the rest is checked on its workaround."""
    from harness.spec import load_spec

    spec = load_spec(str(ROOT / "docs/func_repros" / name))
    outcome = check(spec, [paths.get("dynamo:aot_eager")]).outcomes["dynamo:aot_eager"]
    issue = next(k for k in KNOWN_ISSUES if k.id == "dynamo-fallback-drops-mark-non-differentiable")
    if issue.affects_installed_torch():
        assert outcome.status == "ok" and issue.id in outcome.known, outcome.reason
        # the workaround variant ran its backward, and the deliberate error was raised there on both sides
        assert outcome.result.status == "error" and outcome.result.error_checkpoint == "backward"
    else:
        assert outcome.status == "ok", outcome.reason


@pytest.mark.parametrize("name, expected", [
    # F3 returns a view of f1.0 and f1.0 as-is, f1.0 a view of a clone made in the graph: F3's
    # backward is skipped, so x0, for which it returns zeros, gets None
    ("dynamo_aot_intermediate_alias_skips_backward_e1425297.json",
     {"dynamo-aot-intermediate-alias-skips-backward", "dynamo-hook-on-output-used-inside"}),
    # past the hook on f0.1 (used inside), the pre hook on x0[1], which no Function sends a gradient
    ("dynamo_aot_detached_view_node_hook_832aef02.json",
     {"dynamo-aot-detached-input-node-hooks-not-fired", "dynamo-hook-on-output-used-inside"}),
    # every input that requires grad is a detached view, and eager raises the version-counter
    # error at backward: the lost requires_grad is seen in the run's record, not in a mismatch
    ("dynamo_aot_detached_view_error_at_backward_8183166f.json",
     {"dynamo-aot-detached-input-drops-requires-grad", "dynamo-unread-saved-output-unchecked"}),
    # a 60 s README job: F3 returns a view of f0.0, regenerated outside the graph, so its backward
    # (zeros for x0[1]) is skipped; x0[1] gets no gradient then and AOT detaches it, and f0.0, computed
    # from the detached views only, loses requires_grad (f3.0 comes back requiring grad, as a leaf)
    ("dynamo_aot_detached_behind_skipped_backward_fc7c468a.json", {"dynamo-aot-detached-input-drops-requires-grad"}),
    # the seed of copyslices-skips-gradient-validation (harness/seeds.py) in a 60 s main job: under
    # dynamo AOT's trace of the backward at compile time names CopySlices in the invalid-gradient
    # error, at forward, where eager raises copy_'s size error at backward
    ("dynamo_copyslices_invalid_gradient_at_compile.json", {"dynamo-function-backward-checked-differently"}),
    # HypoFuzz's shrunk finding (python -m harness nightly, 10 minutes): the flag on a generic Function
    # given x0 twice, with set_materialize_grads(False), no jvp
    ("dynamo_clear_saved_tensors_repeated_input.json",
     {"dynamo-function-class-attribute", "dynamo-clear-saved-tensors-with-jvp"}),
])
def test_the_acc300_dynamo_specs_are_explained_by_their_entries_alone(name, expected):
    """Specs of the 5-minute eager,dynamo campaign on the traceable generation (kept in
    docs/func_repros/): each failed unexplained before its entry; now exactly these entries
    explain it and the rest is checked on their workaround, and agrees."""
    from harness.spec import load_spec

    spec = load_spec(str(ROOT / "docs/func_repros" / name))
    outcome = check(spec, [paths.get("dynamo:aot_eager")]).outcomes["dynamo:aot_eager"]
    issues = [k for k in KNOWN_ISSUES if k.id in expected]
    if not all(k.affects_installed_torch() for k in issues):
        pytest.skip(f"these entries do not all affect torch {torch.__version__}")
    assert outcome.status == "ok" and outcome.checked, outcome.reason
    # the path's own entries; eager's own issues that explained a difference from eager are named apart
    assert set(outcome.known) - set(outcome.eager_known) == expected, outcome.known
    assert set(outcome.eager_known) <= {k.id for k in KNOWN_ISSUES if k.affects_path("eager")}, outcome.eager_known


#: campaign causes on unmodified torch, each a registered torch bug in a form its entry did not know,
#: or a twin difference its twin's known issue causes: (spec in docs/func_repros, path, twin pair or
#: False, the entry that must explain it)
CAMPAIGN_CAUSES = [
    # --- a 10-minute eager,func,func+dynamo campaign ---
    # a gradient for a non-tensor input under grad(vmap): reductify's TypeError before autograd's check
    ("func_grad_vmap_gradient_for_non_tensor_3e0d5b73.json", "func.grad_vmap", False,
     "func-grad-vmap-wrong-shape-gradient"),
    # the twin's custom_op is refused at forward, where the original raises eager's documented error at backward
    ("func_twin_custom_op_refused_before_backward_error_458a7fc3.json", "func.grad", "api",
     "func-custom-op-register-autograd-refused"),
    ("func_dynamo_aot_dirty_clone_update_lost_d5137f6d.json", "func.grad+dynamo", False,
     "func-dynamo-aot-dirty-clone-update-lost"),
    # the same lost update under jacrev (vjp under vmap), where the Function's update is the value itself
    ("func_dynamo_aot_dirty_clone_jacrev_d5137f6d.json", "func.jacrev+dynamo", False,
     "func-dynamo-aot-dirty-clone-update-lost"),
    # F1 reads needs_input_grad and is given x0 itself beside F0's view of x1's clone: that view requires
    # grad (F0 also gets x0's clone, and a Function's outputs all require grad), so Dynamo traces F1 as
    # an op and x0's gradient is dropped (all zeros)
    ("func_dynamo_needs_input_grad_function_output_30ec4a97.json", "func.grad+dynamo", False,
     "func-dynamo-needs-input-grad-of-transform-input"),
    ("func_dynamo_needs_input_grad_function_output_30ec4a97.json", "func.vjp+dynamo", False,
     "func-dynamo-needs-input-grad-of-transform-input"),
    # F0(a0, a1=None) applied to x0 alone: inside grad no input requires grad for Dynamo, which inlines
    # forward with the ctx as a0, and F0 returns the ctx as its output
    ("func_dynamo_default_left_out_ctx_returned_88ffd88e.json", "func.grad+dynamo", False,
     "dynamo-function-default-arguments-not-filled"),
    # --- a CI coverage campaign (eager, 20 s) ---
    # F0 saves x1, then F2 scales in place a view of x0's clone passed after x1: under create_graph
    # with inputs=[x0], x1 is never freed (with the view passed first, it is)
    ("eager_dirty_view_first_input_leak_create_graph_251fd979.json", "eager", False,
     "eager-dirty-view-not-first-input"),
    # --- a 20-minute eager,owned,borrowed,compiled,dynamo campaign (--workers 2) ---
    # F0's vjp breaks the graph; F1, in its own region, reads only a view of x0 and sends it no gradient:
    # AOT detaches it, and F1's output loses requires_grad. F0's deliberate error at backward comes after
    # the forward, whose flags were compared (the witnesses once asked for a run without any error)
    ("dynamo_aot_detached_input_deliberate_backward_error.json", "dynamo:aot_eager", False,
     "dynamo-aot-detached-region-input-drops-requires-grad"),
    # the same region loss seen as a retained grad (a hook record): hook0 retains a lost output's grad
    ("dynamo_aot_detached_region_retained_grad.json", "dynamo:aot_eager", False,
     "dynamo-aot-detached-region-input-drops-requires-grad"),
    # F0 returns x3[1] as-is without grad, which Dynamo hands back as x3[1] itself: F1, given it beside
    # x3[1], gets one tensor twice and breaks the graph; then the clone of x1 it sends None gets zeros
    ("dynamo_as_is_duplicate_input_zero_gradient.json", "dynamo:aot_eager", False,
     "aot-unused-gradient-materialized-as-zeros"),
    # F1's forward(*args) bound shifted by one returns the constant (2, None) as its as-is output: the
    # straight forward's clone of it raised AttributeError, once counted a harness error
    ("dynamo_varargs_forward_as_is_output_a_constant.json", "dynamo:aot_eager", False,
     "dynamo-function-varargs-forward"),
    # F1 marks dirty a view of a clone and returns a wrongly shaped gradient for it: AOT's trace of the
    # backward at compile time fails expanding it, at forward, where eager (no backward run) raises nothing
    ("dynamo_aot_dirty_view_wrong_shape_expand_3540a41a.json", "dynamo:aot_eager", False,
     "dynamo-function-backward-checked-differently"),
    # the twin with F0's vjp breaks the graph; through the eager fallback AOT gives the leaf a zero gradient
    # where eager has None, and the post-accumulate hook on it fires
    ("dynamo_twin_vjp_fallback_zero_grad_hook_5ff84527.json", "dynamo:aot_eager", "backward_method",
     "aot-unused-gradient-materialized-as-zeros"),
    # the same, seen as a zero retained grad of the view x0[0] where eager's is None
    ("dynamo_twin_vjp_fallback_zero_retained_c169172f.json", "dynamo:aot_eager", "backward_method",
     "aot-unused-gradient-materialized-as-zeros"),
    # the twin's vjp breaks the graph, and the fallback's backward reads the cleared saved tensors twice
    ("dynamo_twin_vjp_fallback_cleared_saved_twice_b405a987.json", "dynamo:aot_eager", "backward_method",
     "dynamo-clear-saved-tensors-with-jvp"),
    # --- stop 45's 10-minute eager,func,func+dynamo campaign, after GraphSpec.batch_shared ---
    # x0 shared by the batch; F0's first output is masked by the batched x1, its second reads x0 alone:
    # grad(vmap) counts the second's gradient once per sample
    ("func_grad_vmap_shared_input_counted_per_sample_18952384.json", "func.grad_vmap", False,
     "func-grad-vmap-shared-input-gradient-counted-per-sample"),
    # the same spec under torch.compile: Dynamo traces F0 (it reads views of the shared x0, which
    # require grad at grad's level) into an op with no vmap rule
    ("func_grad_vmap_shared_input_counted_per_sample_18952384.json", "func.grad_vmap+dynamo", False,
     "func-dynamo-vmap-grad-apply-template"),
    # the same bug seen at autograd.grad of a double backward (agrad), through F0's dirty clone of x0
    ("func_grad_vmap_shared_counted_double_47b85003.json", "func.grad_vmap", False,
     "func-grad-vmap-shared-input-gradient-counted-per-sample"),
    # and under torch.compile, where the apply-template workaround's print sends Dynamo to its eager fallback
    ("func_dynamo_grad_vmap_shared_counted_fallback_29d543ba.json", "func.grad_vmap+dynamo", False,
     "func-grad-vmap-shared-input-gradient-counted-per-sample"),
    # F0 returns a view of its clone of x0[1]; Dynamo traces F1 (tanh) on it into an op, and grad(grad)
    # loses the second order through it (reduced by hand from 4 Functions and 28 arguments)
    ("func_dynamo_grad_grad_traced_second_order_28a6a1a3.json", "func.grad+dynamo", False,
     "func-dynamo-grad-grad-traced-function-second-order-lost"),
    # F1 returns F0's output as-is, and F0 is a custom_op: under torch.func.jvp its output has no tangent
    # (func-custom-op-forward-ad-zero-tangent), so F1's jvp returns None for it and forward AD asserts
    ("func_jvp_custom_op_output_as_is_assert_62a67f28.json", "func.jvp", False, "fwad-input-as-is-none-tangent"),
    # --- stop 45's 20-minute eager,owned,borrowed,compiled,dynamo campaign (--workers 2) ---
    # F1 saves F0's output f0.0 (modified in place after the forward) for sin's gradient; f0.0 requires
    # grad, but F0 ignores its gradient, so AOT's traced backward drops that read and checks nothing
    ("dynamo_unread_saved_input_gradient_ignored_c3ffe62c.json", "dynamo:aot_eager", False,
     "dynamo-unread-saved-output-unchecked"),
    # backward(inputs=[x3]): the region reaches x3 only through x3[0], which F0 reads and sends no
    # gradient; AOT detaches it, the region's node is never run, and the tensor hook on F0's dirty output
    # never fires
    ("dynamo_aot_detached_view_partial_backward_output_hook_d022f149.json", "dynamo:aot_eager", False,
     "dynamo-aot-detached-input-node-hooks-not-fired"),
    # --- stop 46: GraphSpec.compiled_backward (dynamo's backward under compiled autograd) ---
    # F1 (a duplicate input: Dynamo's eager fallback) returns None for x0, which it also gets a gradient
    # for: the None reaches an add of AOT's backward graph, copied into compiled autograd's
    ("dynamo_compiled_backward_none_in_copied_aot_graph_899b4128.json", "dynamo:aot_eager", False,
     "ca-none-gradient-accumulated"),
    # F0 returns None for every input (x0's clones): the region's backward sends no gradient, compiled autograd
    # skips it, and x0's post-accumulate hook is never called (eager calls it with grad None)
    ("dynamo_compiled_backward_region_skipped_hook_6d068463.json", "dynamo:aot_eager", False,
     "ca-aot-region-without-input-gradient-skipped"),
    # the same skip seen as F0's retained output grad, None where eager has the loss's gradient
    ("dynamo_compiled_backward_region_skipped_retained_36d62d4b.json", "dynamo:aot_eager", False,
     "ca-aot-region-without-input-gradient-skipped"),
    # F1's vjp raises at backward under compiled autograd (ca-function-vjp-ignored), so only the forward's
    # metadata is compared: F2's outputs lost their grad_fn where Dynamo's fallback split the region
    ("dynamo_compiled_backward_vjp_error_lost_requires_grad_5fa1364d.json", "dynamo:aot_eager", False,
     "dynamo-aot-detached-region-input-drops-requires-grad"),
    # the tensor hook on x1, which F1 sends no gradient: AOT's backward returns None for it, and compiled
    # autograd's reorder_tensor_pre_hook_nodes meets that None (after the retain_grad segfault is avoided)
    ("dynamo_compiled_backward_tensor_hook_traced_with_none_cefdceca.json", "dynamo:aot_eager", False,
     "ca-tensor-hook-unreached-output"),
    # --- stop 47: a func campaign (eager, func.vmap, func.vmap.user, func.vmap_grad, func.grad_vmap) ---
    # F1 returns a tangentless input as-is first, so the forward AD loop returns early; its later dirty
    # output keeps its input's own tangent, so F3, which reads it, runs forward AD and returns F1's
    # dropped (computed) output as-is with materialize_grads off: the None-tangent assert
    ("fwad_dropped_dirty_output_keeps_tangent_assert_d2f58e16.json", "eager", False, "fwad-input-as-is-none-tangent"),
    # F0's user vmap rule returns the shared x1 batched (it runs the whole batch); F1, once_differentiable,
    # returns it as it is, a batched result beside a constant whose gradient requires grad
    ("func_grad_vmap_user_rule_batches_shared_input_2cd65206.json", "func.grad_vmap", False,
     "func-grad-vmap-once-differentiable-batched-result"),
    # --- stop 49: OutputSpec.listed ---
    # F0 returns f0.1 in a list and F1 reads it; under torch.compile it requires grad, so the loss reaches x0 through
    # it too and x0 gets a gradient eager never gives it (retain: its second backward also); the comparison says
    # "present on one side only"
    ("dynamo_listed_output_gradient_presence_a0ef2594.json", "dynamo:aot_eager", False, "dynamo-listed-output-tracked"),
    # --- stop 49: a 3-minute func+dynamo campaign ---
    # F0 (clear_saved_tensors_on_access, a print in its forward) is inlined under grad (no input Dynamo sees
    # requires grad); its print breaks the graph, and the twin's generic F0 (a user vmap rule) raises
    # "saved_tensors can only be accessed once" where the plain original runs
    ("func_dynamo_user_vmap_twin_inlined_print_cleared_34888d57.json", "func.grad+dynamo", "vmap_rule",
     "dynamo-clear-saved-tensors-with-jvp"),
    # --- stop 49: Arg.listed, the 10-minute coverage campaign ---
    # F0 reads two views of x1 (no gradient: AOT detaches them) and gets the leaf x0 in a list, which its
    # forward does not read: Dynamo's subgraph has no such input, so nothing keeps the outputs requiring grad
    ("dynamo_aot_detached_views_beside_unread_listed_leaf_bfb506cc.json", "dynamo:aot_eager", False,
     "dynamo-aot-detached-input-drops-requires-grad"),
    # --- stop 50: the README's main job (60 s) ---
    # F0(a0, a1, a2, a3=None) applied to (3.0, -3, x0[1]) with a3 left to its default, no input requiring
    # grad: Dynamo passes the ctx first and every input one place late, so the view output's
    # a2.view_as(a2) meets the int -3 (AttributeError, rendered "ConstantVariable(str: 'view_as')")
    ("dynamo_default_left_out_shifts_view_output_88f7dc6b.json", "dynamo:aot_eager", False,
     "dynamo-function-default-arguments-not-filled"),
    # --- stop 51: graphs that pass one tensor both as itself and in a list ---
    # generic F0(-1.25, c0_1_view, [x0], x0) on an empty x0: Dynamo binds forward(*args) shifted, so
    # the list's place gets the tensor before it, and the forward's listed[0] meets an empty tensor
    ("dynamo_varargs_listed_slot_gets_empty_tensor.json", "dynamo:aot_eager", False,
     "dynamo-function-varargs-forward"),
    # under torch.utils.checkpoint, F0(x0, x3.clone()) returns the clone as-is and a view of it: AOT regenerates
    # them from the intermediate outside the graph and skips F0's backward, so x0 gets None, not its zeros
    ("dynamo_checkpoint_intermediate_alias_skips_backward.json", "dynamo:aot_eager", False,
     "dynamo-aot-intermediate-alias-skips-backward"),
    # F0([x1[0]]) with its own jvp, under func.jvp+dynamo: the transform differentiates the inlined forward,
    # through the listed view, where eager's Function sees no input there and its output's tangent is zero
    ("func_jvp_dynamo_listed_argument_differentiated.json", "func.jvp+dynamo", False,
     "func-dynamo-custom-rules-dropped"),
    # the output side: F0(x1[0]) returns [0.5 - 2 * a0 ** 2]; eager's apply does not wrap the list, so its tensor has
    # no tangent, and the transform over the inlined forward gives it one
    ("func_jvp_dynamo_listed_output_differentiated.json", "func.jvp+dynamo", False,
     "func-dynamo-custom-rules-dropped"),
    # --- stop 51: a 2-minute eager,func.jvp+dynamo,func.grad+dynamo campaign ---
    # F0 applied with a keyword argument (F0.apply(x0, a1=c0_1)); its user-vmap-rule twin is generic code, which
    # reads the spec from its enclosing scope: "Unexpected type in sourceless builder". Stop 50 had narrowed the
    # entry's func+dynamo trigger to the varargs Functions, which leave out those applied with keywords
    ("func_grad_dynamo_keyword_twin_closure_object_4dc2296d.json", "func.grad+dynamo", "vmap_rule",
     "dynamo-function-closure-object"),
]


@pytest.mark.parametrize("name, path, twin, expected", CAMPAIGN_CAUSES)
def test_campaign_causes_are_explained(name, path, twin, expected):
    """Checked as the campaign checked them (with the twin where the cause was one), each ends
    explained, not failed, and the entry is what explained it: on the path's own run, or on the
    twin's side of the pair where the difference was the twin's."""
    from harness.spec import load_spec

    issue = next(k for k in KNOWN_ISSUES if k.id == expected)
    if not issue.affects_installed_torch():
        pytest.skip(f"{expected} does not affect torch {torch.__version__}")
    spec = load_spec(str(ROOT / "docs/func_repros" / name))
    verdict = check(spec, [paths.get(path)], twins=twin)
    outcome = verdict.outcomes[path]
    assert outcome.status != "failed", verdict.report()
    if not twin:
        assert expected in outcome.known, verdict.report()
    else:
        assert verdict.twin is not None, verdict.report()
        assert expected in verdict.twin.paths[path].known, verdict.report()


def test_every_registry_entry_has_a_row_in_the_docs():
    """docs/known_issues.md (what each entry says) and docs/versions.md (the matrix per release)
    name every entry, and no entry the registry does not have."""
    import re

    ids = {k.id for k in KNOWN_ISSUES}
    for doc in ("known_issues.md", "versions.md"):
        text = (ROOT / "docs" / doc).read_text()
        rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", text, re.MULTILINE))
        assert rows == ids, f"docs/{doc}: missing {sorted(ids - rows)}, not in the registry {sorted(rows - ids)}"


def test_a_dropped_tangent_that_a_later_as_is_output_zeroes_is_the_early_return():
    """The 2.15.0 func audit's spec (kept): F1 returns a view of a tangentless input, so
    eager's forward AD drops the tangent of its later output f1.2 (fwad-view-drops-later-tangents);
    F2 then returns f1.2 as-is, and torch materializes its undefined tangent as zeros and sets
    that on it. The dropped tangent reads zeros, not None: still the entry's witness."""
    from harness.spec import load_spec

    spec = load_spec(str(ROOT / "docs/func_repros/fwad_dropped_tangent_zeroed_by_as_is_9341cbf9.json"))
    issue = next(k for k in KNOWN_ISSUES if k.id == "fwad-view-drops-later-tangents")
    outcome = check(spec, [paths.get("eager")]).outcomes["eager"]
    assert outcome.status == "ok" and outcome.checked, outcome.reason
    assert (issue.id in outcome.known) == issue.affects_installed_torch(), outcome.known
    if issue.affects_installed_torch():
        from harness.build import build

        raw = paths.get("eager").run(build(spec))  # the example itself, not its workaround variant
        assert not raw.tensors["forward_ad"]["tangent:f1.2"].any()  # zeros, not None


def test_after_the_early_return_an_as_is_or_dirty_output_keeps_its_input_tangent():
    """Plain torch, the model in harness/dataflow.py (_simulate_forward_ad): after the forward AD loop
    returns early at an input returned as-is without a tangent, a later output returned as-is keeps its
    input's tangent (a view of it), a dirty one its input's own (the jvp's in-place update), and a
    computed one gets none."""
    import torch.autograd.forward_ad as fwAD

    class F(torch.autograd.Function):
        @staticmethod
        def forward(a, b, c):
            c.mul_(2.0)
            return a, b, torch.zeros(3), c

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[2])

        @staticmethod
        def jvp(ctx, ta, tb, tc):
            return ta, tb, torch.ones(3), tc.mul_(2.0)

        @staticmethod
        def backward(ctx, *grads):
            return grads[0], grads[1], grads[3]

    with fwAD.dual_level():
        b = fwAD.make_dual(torch.randn(3), torch.full((3,), 5.0))
        c = fwAD.make_dual(torch.randn(3), torch.full((3,), 7.0)).clone()
        tangents = [fwAD.unpack_dual(o).tangent for o in F.apply(torch.randn(3), b, c)]
    issue = next(k for k in KNOWN_ISSUES if k.id == "fwad-view-drops-later-tangents")
    if issue.affects_installed_torch():
        assert tangents[2] is None  # the computed output's tangent is dropped
    assert [None if t is None else t[0].item() for t in (tangents[1], tangents[3])] == [5.0, 14.0]


def test_a_dynamo_audit_spec_whose_lost_mark_gives_a_leaf_a_gradient_eager_leaves_none():
    """The 2.14.1 dynamo audit's spec (kept): F0's one tensor output is marked
    non-differentiable and its mark is lost in the eager fallback, so F0's backward runs and
    sends its inputs gradients (zeros, empty here: shape (0,)) where eager's are None. That is the
    entry's damage; the rest is checked on its workaround."""
    from harness.spec import load_spec

    spec = load_spec(str(ROOT / "docs/func_repros/dynamo_fallback_lost_mark_gradient_not_none_a8ed736c.json"))
    outcome = check(spec, [paths.get("dynamo:aot_eager")]).outcomes["dynamo:aot_eager"]
    issue = next(k for k in KNOWN_ISSUES if k.id == "dynamo-fallback-drops-mark-non-differentiable")
    # partly: dynamo-trace-state-cycle (no workaround) leaves the release checks unjudged, the rest agreed
    assert outcome.status == "ok" or outcome.status == "partly" and "unchecked: what" in outcome.reason, \
        outcome.reason
    assert (issue.id in outcome.known) == issue.affects_installed_torch(), outcome.known


def test_every_upstream_reference_is_an_issue_a_documented_limitation_or_none():
    """`upstream` names an issue or pull request of PyTorch's trackers (a note in parentheses
    allowed), or where torch documents the limitation; () says a search found no report, None that
    nobody searched. `related` names cousins the same way, never documentation. `known --list`
    prints the upstream reference for every entry, in the registry's order."""
    import re

    reference = re.compile(r"pytorch/\w+#\d+( \(.+\))?$")
    for issue in KNOWN_ISSUES:
        assert issue.upstream is None or isinstance(issue.upstream, tuple), issue.id
        assert all(reference.match(ref) or ref.startswith("documented limitation: ")
                   for ref in issue.upstream or ()), (issue.id, issue.upstream)
        assert isinstance(issue.related, tuple) and all(map(reference.match, issue.related)), (issue.id, issue.related)
        assert not set(issue.related) & set(issue.upstream or ()), issue.id
    vjp = next(k for k in KNOWN_ISSUES if k.id == "ca-function-vjp-ignored")
    assert vjp.upstream_text() == "pytorch/pytorch#191498 (open draft pull request)"


def test_known_list_prints_every_entry_with_its_upstream_reference(capsys):
    from harness.cli import main

    assert main(["known", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [k.id for k in KNOWN_ISSUES]
    for line, issue in zip(lines, KNOWN_ISSUES):
        assert line.endswith(f"upstream: {issue.upstream_text()}"), line
    assert main(["known", "no-such-entry"]) == 2
    assert "no known issue no-such-entry" in capsys.readouterr().out


def test_the_published_bug_list_matches_the_registry():
    """docs/bugs.md is `python -m harness known --bugs`: regenerate it after changing an entry."""
    from harness.known_issues import bug_list

    published = (Path(__file__).resolve().parent.parent / "docs" / "bugs.md").read_text()
    assert published == bug_list(), "docs/bugs.md is stale: python -m harness known --bugs > docs/bugs.md"


def _explained_by(issue_id, spec_file, monkeypatch):
    """The real spec from a campaign (docs/func_repros/), checked on dynamo:aot_eager with the
    registry, and again without the entry: with it the path is ok and names the entry; without
    it the path fails, every mismatch is the entry's damage and its witness sees them. Returns
    the spec."""
    import harness.known_issues as registry
    from harness.spec import load_spec

    spec = load_spec(str(ROOT / "docs/func_repros" / spec_file))
    issue = next(k for k in KNOWN_ISSUES if k.id == issue_id)
    path = paths.get("dynamo:aot_eager")
    outcome = check(spec, [path]).outcomes[path.name]
    # partly: another entry hit beside it has no workaround (dynamo-trace-state-cycle), so the roles
    # that one damages are not judged (the rest agreed)
    assert outcome.status == "ok" or outcome.status == "partly" and "unchecked: what" in outcome.reason, \
        outcome.reason
    assert (issue.id in outcome.known) == issue.affects_installed_torch(), outcome.known
    if not issue.affects_installed_torch():
        return spec
    monkeypatch.setattr(registry, "KNOWN_ISSUES", tuple(k for k in KNOWN_ISSUES if k.id != issue_id))
    without = check(spec, [path]).outcomes[path.name]
    assert without.status == "failed" and without.mismatches, without.reason
    assert all(issue.damage(spec, m) for m in without.mismatches), without.mismatches
    assert issue.witness(spec, without.result, without.mismatches)
    # the workaround variant does not have the structure, and is ok without the entry
    variant = issue.workaround(spec)
    assert not issue.triggered(variant, path.name)
    assert check(variant, [path]).outcomes[path.name].status in ("ok", "partly")
    return spec


def test_a_dirty_zero_dim_float64_input_of_a_compiled_forward_frame_keeps_its_old_value(monkeypatch):
    """The 5-minute dynamo campaign's f9d94b9a (torch 2.13.0): F0, which no input requiring grad
    reaches, modifies a 0-dim float64 clone in place and marks it dirty; Dynamo breaks the graph at
    mark_dirty, compiles F0's forward frame on its own and drops the in-place op on its input, so
    f0.1 is its input's old value (dynamo-zero-dim-float64-input-mutation-lost)."""
    _explained_by("dynamo-zero-dim-float64-input-mutation-lost",
                  "dynamo_zero_dim_float64_dirty_input_lost_f9d94b9a.json", monkeypatch)


def test_a_clone_a_fallback_function_sends_none_gives_its_leaf_zeros(monkeypatch):
    """The 5-minute dynamo campaign's fccc163f: every Function runs through Dynamo's eager
    fallback (user jvps); F1 returns None for x0's clone, made in the compiled region before it,
    and that region's backward hands x0 zeros where eager's autograd.grad gives None
    (aot-unused-gradient-materialized-as-zeros)."""
    _explained_by("aot-unused-gradient-materialized-as-zeros", "aot_unused_gradient_zeros_fccc163f.json",
                  monkeypatch)


def test_a_dirty_mark_shifted_onto_a_fresh_tensor_is_silent_and_explained(monkeypatch):
    """The 5-minute dynamo campaign's c51a1508: F0 returns (o0, 0, a2 dirty, o3), so Dynamo
    replays mark_dirty on o3, a fresh tensor (a UserWarning, no error): a2 comes back a view of
    its clone (alias f0.2, and f2.0, a view of it) and F0's backward is skipped for it, so x0's
    gradient is wrong. dynamo-mark-dirty-index-shifted's silent form explains the aliases and the
    gradients (dynamo-aot-intermediate-alias-skips-backward also claims the gradients, through
    F2's view of f0.2: without that entry they are still explained)."""
    import harness.known_issues as registry

    spec = _explained_by("dynamo-mark-dirty-index-shifted", "dynamo_dirty_mark_shifted_silent_c51a1508.json",
                         monkeypatch)
    monkeypatch.setattr(registry, "KNOWN_ISSUES",
                        tuple(k for k in KNOWN_ISSUES if k.id != "dynamo-aot-intermediate-alias-skips-backward"))
    outcome = check(spec, [paths.get("dynamo:aot_eager")]).outcomes["dynamo:aot_eager"]
    assert outcome.status in ("ok", "partly") and "dynamo-mark-dirty-index-shifted" in outcome.known, outcome.reason


def test_a_path_difference_that_eagers_own_issue_explains_is_recorded_as_known_on_the_path():
    """Eager hits fwad-input-as-is-none-tangent (F1 returns as-is F0's non-differentiable output, which
    has no tangent) and raises at forward_ad; func.jacfwd's own forward AD does not: its difference
    from eager is eager's damage, so the path is judged against the math oracle alone there. That is
    recorded on the path (known, with what it explained), never dropped silently."""
    from harness import paths
    from harness.check import check
    from harness.records import outcome_record
    from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec

    forms = dict(style="setup_context", materialize_grads=False, jvp=True, vmap=True, needs_input_grad="ignore",
                 unused_grad="none")
    spec = GraphSpec(shape=(3,), dtype="float32", leaves=(LeafSpec(False),), backward="none", forward_ad=True,
                     functions=(
                         FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec("input", slot=0),
                                                                   OutputSpec(non_differentiable=True),
                                                                   OutputSpec("const", value=0),
                                                                   OutputSpec("const", value=0)), **forms),
                         FunctionSpec(args=(Arg("f0.1"), Arg("x0")), outputs=(OutputSpec("input", slot=0),),
                                      tuple_output=False, **forms)))
    verdict = check(spec, paths.parse("eager,func.jacfwd"))
    outcome = verdict.outcomes["func.jacfwd"]
    assert outcome.status == "ok", verdict.report()
    assert outcome.eager_known == {"fwad-input-as-is-none-tangent": "forward_ad error"}
    assert "fwad-input-as-is-none-tangent" in outcome.known
    assert outcome_record(outcome)["eager_known"] == outcome.eager_known
    assert ("[func.jacfwd] eager's known torch issue fwad-input-as-is-none-tangent explained its difference from "
            "eager at forward_ad error: judged against the math oracle alone there") in verdict.report()


def test_every_entry_has_a_kind():
    """What the bug does to a user (entry.KINDS), which docs/bugs.md and the upstream reports show."""
    from harness.known_issues.entry import KINDS

    unclassified = [k.id for k in KNOWN_ISSUES if k.kind not in KINDS]
    assert not unclassified, f"give these entries a kind, one of {KINDS}: {unclassified}"


@pytest.mark.parametrize("issue", KNOWN_ISSUES, ids=lambda k: k.id)
def test_reduced_reproducer_exits_nonzero_where_the_entry_is_present(issue):
    """The reproducer an upstream report embeds (reproducers/reduced/<id>.py, run as a user runs it,
    with its default arguments) shows the bug exactly where the registry says it is present on this
    torch, which test_known_issue_reproduces_where_it_says checks `known`'s reproducer against: exit
    1 with REPRODUCED (a crash entry's may die of a signal), else exit 0; never a failure of
    another kind."""
    from harness.known_issues.reports import reduced_reproducer, run_reduced

    run = run_reduced(reduced_reproducer(issue), timeout=600)
    assert run.state in ("reproduces", "crashes", "does not reproduce"), (run.state, run.error, run.observed)
    assert run.state != "crashes" or issue.kind == "crash", run.observed
    assert run.present == issue.affects_installed_torch(), (run.state, run.expected, run.observed)


@pytest.mark.parametrize("issue_id, spec_file", [
    # F1 (loop form) scales in place x1's clone; F0's mark_dirty without a node breaks the graph, so
    # Dynamo skips the loop's frame and the clone comes into F1's frame from outside: F1's backward is
    # skipped for it, and x1's gradient is 1 where eager's is 0.5 (beside the mark shift of F3)
    ("dynamo-aot-dirty-graph-input-skips-backward", "dynamo_dirty_frame_input_2_13.json"),
    # a tensor hook on x0[2], which F0 reads and sends None: AOT detaches it, the hook never fires
    # (under checkpoint, past F2's deliberately wrong-shaped gradient)
    ("dynamo-aot-detached-input-node-hooks-not-fired", "dynamo_tensor_hook_on_detached_view_2_13.json"),
    # the same with two backwards (retain_graph): ('fired', 'fired') against ()
    ("dynamo-aot-detached-input-node-hooks-not-fired", "dynamo_tensor_hook_on_detached_view_2_14.json"),
    # F0's mark on f0.3 is dropped (past the tensors), so F2, reading f0.3's clone, has a node under
    # Dynamo and its too-few-gradients backward is traced at compile time: IndexError at forward
    ("dynamo-function-backward-checked-differently", "dynamo_indexerror_through_lost_mark_2_14.json"),
    # F1 alone in the region after F0's graph break reads x0[1] and sends it None: AOT detaches it,
    # no output requires grad, and the path skips the backward eager runs
    ("dynamo-aot-detached-region-input-drops-requires-grad", "dynamo_detached_region_skipped_backward.json"),
    # F0's dirty mark goes past its tensors; a post-accumulate hook on x0 records the wrong gradient
    ("dynamo-mark-dirty-index-shifted", "dynamo_dirty_mark_shifted_hook_record_221cc708.json"),
    # F2 saves f1.1 (made under no_grad) for its tanh term, and f1.1 is modified in place before
    # backward: AOT's traced backward does not need it (its gradient is unneeded), so no error
    ("dynamo-unread-saved-output-unchecked", "dynamo_aot_saved_input_without_grad_unchecked.json"),
])
def test_the_triaged_dynamo_specs_are_explained_by_their_entry(issue_id, spec_file, monkeypatch):
    """Specs that eager,dynamo campaigns failed unexplained (kept in docs/func_repros/): each is now
    explained by the entry, checked past it on its workaround, and fails without it."""
    _explained_by(issue_id, spec_file, monkeypatch)


def test_the_aliases_a_shifted_mark_changes_are_its_damage(monkeypatch):
    """A campaign's spec (docs/func_repros/): F0 returns (0, f0.1 marked, f0.2), so under Dynamo
    the mark moves to f0.2, and F1's view of f0.2 comes back as f0.2 itself (AOT regenerates an
    alias of an intermediate only when both require grad). Both entries it meets explain it; without
    the mark shift's, what is left is aliases only, and they are its damage."""
    import harness.known_issues as registry
    from harness.spec import load_spec

    spec = load_spec(str(ROOT / "docs/func_repros/dynamo_marks_shifted_alias_2_13.json"))
    path = paths.get("dynamo:aot_eager")
    shifted = "dynamo-mark-non-differentiable-index-shifted"
    expected = {shifted, "dynamo-aot-detached-input-drops-requires-grad"}
    if not all(k.affects_installed_torch() for k in KNOWN_ISSUES if k.id in expected):
        pytest.skip(f"these entries do not all affect torch {torch.__version__}")
    outcome = check(spec, [path]).outcomes[path.name]
    assert outcome.status == "ok" and outcome.checked and set(outcome.known) == expected, outcome.reason
    issue = next(k for k in KNOWN_ISSUES if k.id == shifted)
    monkeypatch.setattr(registry, "KNOWN_ISSUES", tuple(k for k in KNOWN_ISSUES if k.id != shifted))
    without = check(spec, [path]).outcomes[path.name]
    assert without.status == "failed" and without.mismatches, without.reason
    assert {m.role for m in without.mismatches} == {"alias:f0.2", "alias:f1.1"}, without.mismatches
    assert all(issue.damage(spec, m) for m in without.mismatches)


def test_a_backward_one_gradient_short_for_a_tensor_in_a_list_is_compiled_autograds_unvalidated_count():
    """F0(x0, [x1]) whose backward returns one gradient, not two: eager's count check raises, and
    compiled autograd, which has no input for the list, runs (ca-function-backward-unvalidated). The
    list is no tensor input (`Arg.is_tensor_input`): the IndexError entry of a too-short backward, whose
    missing gradient is a tensor input's, is not it. (Before stop 50 this example failed unexplained.)"""
    spec = GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec()), backward="backward",
                     functions=(FunctionSpec(args=(Arg("x0"), Arg("x1", listed=True)), error="grad_count",
                                             save=("inputs",), outputs=(OutputSpec(terms=(
                                                 Term(0, "sin", 1.0), Term(1, "sin", 1.0))),)),))
    issue = next(k for k in KNOWN_ISSUES if k.id == "ca-function-backward-unvalidated")
    if not issue.affects_installed_torch():
        pytest.skip(f"{issue.id} does not affect torch {torch.__version__}")
    outcome = check(spec, [paths.get("compiled")], twins=False).outcomes["compiled"]
    assert outcome.status == "ok" and outcome.checked and outcome.known == (issue.id,), outcome.reason
