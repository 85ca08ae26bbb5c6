"""check_function on real-style Functions: the correct ones pass every check that applies to
them, each broken variant is rejected by the check named for its mistake, reproducers
reproduce, Hypothesis samples shrink, and nothing that did not run reads as passed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import strategies as st

from harness.function_check import CHECKS, FunctionCheckError, NothingChecked, check_function, reproducer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))  # the Functions are imported by name, as a project imports its own
import functions

#: checks that must have judged each correct Function (passed on at least one path)
EXPECTED_RUN = {
    "saved tensors": {"outputs", "gradients", "gradcheck", "double_backward", "mark_dirty", "lifetimes"},
    "mark_dirty": {"outputs", "gradients", "gradcheck", "double_backward", "mark_dirty", "lifetimes"},
    "non-differentiable outputs": {"outputs", "gradients", "gradcheck", "double_backward", "lifetimes"},
    "straight-through estimator": {"outputs", "gradients", "double_backward", "lifetimes"},
    "jvp": {"outputs", "gradients", "gradcheck", "jvp", "double_backward", "lifetimes"},
    "setup_context + vmap": {"outputs", "gradients", "gradcheck", "vmap", "double_backward", "lifetimes"},
    "vmap staticmethod": {"outputs", "gradients", "gradcheck", "vmap", "double_backward", "lifetimes"},
    "tensors and non-tensors": {"outputs", "gradients", "gradcheck", "double_backward", "lifetimes"},
    "once_differentiable": {"outputs", "gradients", "gradcheck", "lifetimes"},
}
#: a straight-through estimator's gradient is by design not the derivative of round()
STE_CHECKS = ["outputs", "gradients", "double_backward", "mark_dirty", "lifetimes"]


def _names(selected_paths) -> list[str]:
    return [p.name for p in selected_paths]


#: (check, path family) -> why a correct Function's check may judge nothing there (the path runs
#: eager's own code for it: the forward under compiled autograd, an untraced Function under Dynamo)
NOT_JUDGED = {("outputs", "compiled"): "the forward is eager's own code on this path",
              ("gradients", "dynamo"): "Dynamo did not trace the Function"}

#: a torch bug check_function found (see test_dynamo_gets_the_in_place_gradient_wrong): the
#: in-place Function is checked on every other path
TORCH_BUG_PATHS = {"mark_dirty": "dynamo"}


@pytest.mark.parametrize("kind", list(functions.CORRECT))
def test_a_correct_function_passes_every_check_that_applies(kind, selected_paths):
    function, samples = functions.CORRECT[kind]
    checks = STE_CHECKS if function is functions.RoundSTE else None
    selected_paths = [p for p in selected_paths if p.name.partition(":")[0] != TORCH_BUG_PATHS.get(kind)]
    report = check_function(function, samples(), paths=_names(selected_paths), checks=checks)
    assert not report.failures
    assert EXPECTED_RUN[kind] <= set(report.checks_run()), report.table()
    assert report.unchecked() == [], report.table()
    # every other path was compared with eager and passed: none is silently missing from the report, and
    # a check that did not judge there says why, in the words its path documents
    outcomes = report.outcomes()
    for path in _names(selected_paths):
        family = path.partition(":")[0]
        for check in ("outputs", "gradients", "lifetimes"):
            name = next(p for c, p in outcomes if c == check and p.partition(":")[0] == family)
            status, detail = outcomes[(check, name)]
            if family == "eager" and check != "lifetimes":
                assert (status, detail.partition(" for")[0]) == ("unsupported", "the reference"), report.table()
            elif status == "unsupported" and (check, family) in NOT_JUDGED:
                assert detail.startswith(NOT_JUDGED[(check, family)]), report.table()
            else:
                assert status == "ok", (check, name, report.table())


def test_dynamo_gets_the_in_place_gradient_wrong():
    # known torch issue dynamo-aot-dirty-graph-input-skips-backward: under torch.compile with AOT
    # Autograd, a Function that marks dirty an input made outside the compiled region has its
    # backward skipped for it (the gradient of InplaceLeakyReLU is 1 where it must be the slope);
    # eager, the native apply and compiled autograd agree. check_function does not apply registry
    # entries that need a graph's structure, so it reports it. When torch fixes it, this test fails:
    # move the Function back to every path.
    sample = [(torch.tensor([[0.5, -0.25], [0.4, -1.0]], requires_grad=True), 0.1)]
    with pytest.raises(FunctionCheckError) as caught:
        check_function(functions.InplaceLeakyReLU, sample, paths=["eager", "dynamo:aot_eager"],
                       checks=["outputs", "gradients"])
    assert [(r.check, r.path) for r in caught.value.report.failures] == [("gradients", "dynamo:aot_eager")]


def test_what_did_not_run_says_why():
    report = check_function(functions.OnceDifferentiableSigmoid, functions.CORRECT["once_differentiable"][1](),
                            paths=["eager"])
    assert report.outcomes()[("double_backward", "eager float64")] == (
        "unsupported", "OnceDifferentiableSigmoid.backward is @once_differentiable")
    assert report.outcomes()[("jvp", "eager")] == ("unsupported", "OnceDifferentiableSigmoid defines no jvp")
    assert "double_backward" not in report.checks_run()


def test_the_in_place_update_is_seen_as_declared():
    report = check_function(functions.InplaceLeakyReLU, functions.CORRECT["mark_dirty"][1](), paths=["eager"],
                            checks=["mark_dirty"])
    assert report.outcomes()[("mark_dirty", "eager")] == ("ok", "in-place update of arg0 declared")


def test_non_tensor_outputs_are_compared(selected_paths):
    compared = [name for name in _names(selected_paths) if name.partition(":")[0] in ("owned", "borrowed", "dynamo")]
    if not compared:
        pytest.skip("no path here compares a Function's outputs with eager's")
    report = check_function(functions.MaskedMean, functions.CORRECT["tensors and non-tensors"][1](),
                            paths=["eager", *compared], checks=["outputs"], raise_on_failure=False)
    assert not report.failures, report.table()
    outcomes = report.outcomes()
    for name in compared:
        path = next(p for c, p in outcomes if c == "outputs" and p.partition(":")[0] == name.partition(":")[0])
        assert outcomes[("outputs", path)] == ("ok", ""), report.table()
    # eager is only the reference of the outputs: with the float64 oracles left out, nothing judged it
    (eager,) = report.unchecked()
    assert eager.startswith("on path eager (outputs: unsupported (the reference for the other paths"), eager


@pytest.mark.parametrize("kind", list(functions.BROKEN))
def test_a_broken_variant_is_rejected_by_the_check_named_for_its_mistake(kind, selected_paths):
    function, samples, check = functions.BROKEN[kind]
    with pytest.raises(FunctionCheckError) as caught:
        check_function(function, samples(), paths=_names(selected_paths))
    failed = {r.check for r in caught.value.report.failures}
    assert check in failed, caught.value.report.table()
    assert f"  {check} [" in str(caught.value)
    assert f"Reproducer for {check}" in str(caught.value)


def test_the_straight_through_estimator_fails_gradcheck_by_design():
    # why STE_CHECKS leaves gradcheck out: its gradient is not the derivative of round()
    with pytest.raises(FunctionCheckError, match=r"gradcheck \[eager float64\]"):
        check_function(functions.RoundSTE, functions.CORRECT["straight-through estimator"][1](), paths=["eager"],
                       checks=["gradcheck"])


def _run_script(path: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": f"{ROOT}:{HERE}", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env,
                          check=False)


def test_the_reproducer_reproduces_and_a_fixed_function_does_not(tmp_path):
    sample = (torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True))
    with pytest.raises(FunctionCheckError) as caught:
        check_function(functions.SwappedGradMul, [sample], paths=["eager"], checks=["gradcheck"])
    failing = tmp_path / "repro_swapped.py"
    failing.write_text(caught.value.reproducers["gradcheck"])
    done = _run_script(failing)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gradcheck [eager float64]" in done.stdout

    fixed = tmp_path / "repro_fixed.py"
    fixed.write_text(reproducer(functions.LinearFunction, functions.CORRECT["saved tensors"][1]()[0], ["gradcheck"],
                                ["eager"], "cpu", "a correct Function"))
    done = _run_script(fixed)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "did not reproduce" in done.stdout


class _HalfSquare(torch.autograd.Function):
    """x * x whose backward forgets the factor 2: wrong wherever x != 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


def _vectors():
    return st.lists(st.floats(-4, 4, width=32), min_size=1, max_size=6).map(
        lambda v: (torch.tensor(v, requires_grad=True),))


def test_a_strategy_is_a_property_test_that_shrinks():
    with pytest.raises(FunctionCheckError) as caught:
        check_function(_HalfSquare, _vectors(), paths=["eager"], checks=["gradcheck"], max_examples=30)
    (minimal,) = caught.value.report.samples
    assert minimal[0].tolist() == [1.0]  # one element, the simplest value where the bug shows
    assert "sample_passes_every_check(" in "".join(getattr(caught.value, "__notes__", []))  # Hypothesis names it


def test_a_strategy_that_holds_runs_every_example():
    report = check_function(functions.Exp, _vectors(), paths=["eager"], checks=["gradcheck", "jvp"],
                            max_examples=8)
    assert len(report.samples) == 8
    assert report.outcomes()[("jvp", "eager float64")][0] == "ok"


def test_a_path_that_cannot_take_the_check_reports_unsupported():
    sample, asked = functions.CORRECT["jvp"][1](), {"paths": ["eager", "dynamo:aot_eager"],
                                                     "checks": ["double_backward", "jvp"]}
    report = check_function(functions.Exp, sample, raise_on_failure=False, **asked)
    assert report.outcomes()[("double_backward", "dynamo:aot_eager")] == (
        "unsupported", "double backward (AOT Autograd backward graphs are once-differentiable)")
    # forward AD runs eager's own code there: the check cannot fail, so it judges nothing
    assert report.outcomes()[("jvp", "dynamo:aot_eager")] == (
        "unsupported", "forward AD is not compiled on this path: it runs eager's own code")
    # so nothing was checked on dynamo: never a pass
    assert report.unchecked() == ["on path dynamo:aot_eager (double_backward: unsupported (double backward (AOT Autograd "
                                  "backward graphs are once-differentiable)); jvp: unsupported (forward AD is not "
                                  "compiled on this path: it runs eager's own code))"]
    with pytest.raises(NothingChecked, match=r"^Exp: nothing checked on path dynamo:aot_eager \(double_backward"):
        check_function(functions.Exp, sample, **asked)


def test_gradients_judge_nothing_where_nothing_requires_grad():
    """No input requires grad: no gradient was compared anywhere, so gradients never reads ok, and a
    check of gradients alone is nothing checked."""
    sample = [(torch.randn(3),)]
    report = check_function(functions.Exp, sample, paths=["owned"], checks=["outputs", "gradients"],
                            raise_on_failure=False)
    outcomes = report.outcomes()
    assert outcomes[("outputs", "owned")] == ("ok", "")
    assert outcomes[("gradients", "owned")][0] == "unsupported", report.table()
    assert "ok" not in {status for (check, _), (status, _) in outcomes.items() if check == "gradients"}
    with pytest.raises(NothingChecked, match=r"^Exp: nothing checked for check gradients \(gradients: unsupported "
                                             r"\(no gradient to compare"):
        check_function(functions.Exp, sample, paths=["owned"], checks=["outputs", "gradients"])


def test_bad_arguments_are_one_clear_sentence():
    from harness.paths import UnknownPathError

    sample = [(torch.randn(2, requires_grad=True),)]
    with pytest.raises(UnknownPathError, match="unknown path 'bogus'; valid paths: eager"):
        check_function(functions.Exp, sample, paths=["bogus"])
    with pytest.raises(ValueError, match="unknown check 'speed'; valid checks: outputs"):
        check_function(functions.Exp, sample, checks=["speed"])
    with pytest.raises(TypeError, match="needs a torch.autograd.Function subclass"):
        check_function(torch.exp, sample)


def test_harness_exposes_check_function():
    import harness

    assert harness.check_function is check_function


def test_a_sample_the_function_cannot_take_fails_outputs_on_eager():
    wrong_shapes = [(torch.randn(4, 3, requires_grad=True), torch.randn(2, 5, requires_grad=True), None)]
    with pytest.raises(FunctionCheckError) as caught:
        check_function(functions.LinearFunction, wrong_shapes, paths=["eager"], checks=["outputs", "gradients"])
    outcomes = caught.value.report.outcomes()
    assert outcomes[("outputs", "eager")][0] == "failed"
    assert outcomes[("outputs", "eager")][1].startswith("eager raised RuntimeError at forward")
    assert outcomes[("gradients", "eager")][0] == "unsupported"  # never reached: not ok


class _RaisesKeyError(torch.autograd.Function):
    """A forward that raises what the runner does not record as an observation (KeyError)."""

    @staticmethod
    def forward(ctx, x):
        return {}["missing"]

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_something_raising_outside_the_check_fails_it_and_says_who_raised():
    report = check_function(_RaisesKeyError, [(torch.randn(3, requires_grad=True),)], paths=["eager"],
                            checks=["outputs", "mark_dirty"], raise_on_failure=False)
    by_key = {(r.check, r.path): r for r in report.records}
    for key in (("outputs", "eager"), ("mark_dirty", "eager")):
        record = by_key[key]
        assert (record.status, record.raised) == ("failed", True), report.table()
        assert record.detail.startswith("_RaisesKeyError raised KeyError"), record.detail
    assert report.failures == [by_key[("outputs", "eager")], by_key[("mark_dirty", "eager")]]


class _HardSwish(torch.autograd.Function):
    """timm's memory-efficient hard swish: a backward built of differentiable ops, no jvp."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * (x + 3).clamp(0, 6) / 6

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        slope = torch.where(x < -3, torch.zeros_like(x), torch.where(x > 3, torch.ones_like(x), x / 3 + 0.5))
        return grad * slope


def test_a_registered_torch_issue_reads_known_on_a_check_of_values_never_failed():
    """Known issues apply to every check, not only to lifetimes: under torch.compile(backend='eager')
    the second-order gradient through a Function's backward is lost (the registry's
    dynamo-eager-function-backward-not-differentiable), all that double_backward judges there."""
    sample = [(torch.tensor([-4.0, -1.5, 0.25, 2.0, 5.0], requires_grad=True),)]
    report = check_function(_HardSwish, sample, paths=["eager", "dynamo:eager"], checks=["double_backward"],
                            raise_on_failure=False)
    (record,) = [r for r in report.records if (r.check, r.path) == ("double_backward", "dynamo:eager")]
    assert (record.status, record.known) == ("known", ("dynamo-eager-function-backward-not-differentiable",)), \
        report.table()
    assert not report.failures, report.table()
    # eager's own double backward is still judged, by gradgradcheck
    assert report.outcomes()[("double_backward", "eager float64")][0] == "ok", report.table()


def test_a_user_function_and_a_generated_graph_go_through_the_one_check():
    """check(subject, paths, policy): a FunctionSample is a one-node subject the registry's paths
    run unchanged; its policy's gradcheck limit is the one its records apply (a policy with a
    limit of 4 elements calls gradcheck of a 6-element sample unsupported, the default checks it);
    a GraphSpec goes through the same entry with the campaign's policy."""
    import dataclasses

    from harness import paths
    from harness.check import FUNCTION, GRAPH, FunctionSample, SampleVerdict, Verdict, check
    from harness.function_run import select_paths
    from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

    runnable, _ = select_paths(["eager", "owned"])
    sample = FunctionSample(functions.Exp, (torch.randn(2, 3, dtype=torch.float64, requires_grad=True),),
                            ("outputs", "gradients", "gradcheck"))
    verdict = check(sample, runnable)
    assert isinstance(verdict, SampleVerdict) and not verdict.failed, verdict.report()
    statuses = {(r.check, r.path): r.status for r in verdict.records}
    assert statuses[("gradcheck", "eager float64")] == "ok" and statuses[("gradients", "owned")] == "ok", statuses
    narrow = check(sample, runnable, policy=dataclasses.replace(FUNCTION, gradcheck_elements=4))
    (record,) = [r for r in narrow.records if r.check == "gradcheck"]
    assert record.status == "unsupported" and "(6 > 4" in record.detail, record

    spec = GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(),), functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5),)),),
                     save=("inputs",)),))
    graph = check(spec, [paths.get("eager"), paths.get("owned")], policy=GRAPH)
    assert isinstance(graph, Verdict) and not graph.failed and graph.outcomes["owned"].status == "ok", graph.report()
