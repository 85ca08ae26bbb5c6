"""The seeded-fault catalog (harness/selfeval): each fault is off unless installed, is
gone again once removed, and is seen by the check it was made for on a small hand-made
spec. The native faults are tested in tests/native/test_perturb.py; the campaign-level
measurement is `python -m harness selfeval` (one cheap fault end to end here)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import torch
from torch.autograd.function import BackwardCFunction

from harness import build, generic, paths, plain, run, selfeval
from harness.check import check
from harness.selfeval import evaluate
from harness.spec import Arg, FunctionSpec, GraphSpec, HookSpec, LeafSpec, OutputSpec, Term

ONE = GraphSpec(
    shape=(2, 3), dtype="float64",
    leaves=(LeafSpec(True), LeafSpec(True, "transposed")),
    functions=(FunctionSpec(
        args=(Arg("x0"), Arg(const=2), Arg("x1")),
        outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(2, "square", -0.5))),
                 OutputSpec("compute", terms=(Term(0, "tanh", 0.75), Term(2, "linear", 2.0)))),
        save=("inputs",), jvp=True),),
    backward="backward", forward_ad=True)


def with_(spec: GraphSpec, **function_fields) -> GraphSpec:
    fn = dataclasses.replace(spec.functions[0], **function_fields)
    return dataclasses.replace(spec, functions=(fn,))


#: two tensor arguments passed by keyword (FunctionSpec.keyword_args), as `F0.apply(a1=x1, a0=x0)`
KEYWORDS = GraphSpec(
    shape=(2, 3), dtype="float64", leaves=(LeafSpec(), LeafSpec()),
    functions=(FunctionSpec(
        args=(Arg("x0"), Arg("x1")),
        outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(1, "linear", -0.5))),),
        style="setup_context", save=("inputs",), keyword_args=2),),
    backward="backward")

#: fault -> (spec, a line the report must contain), on the eager path
SEEN_ON_EAGER = {
    "keyword_args_bound_in_call_order": (KEYWORDS, "eager vs math: forward out:f0.0: outside tolerance"),
    "wrong_backward": (ONE, "eager vs math: backward grad:x0: outside tolerance"),
    "wrong_jvp": (ONE, "eager vs math: forward_ad tangent:f0.0: outside tolerance"),
    "sin_backward_term_dropped": (ONE, "eager vs math: backward grad:x0: outside tolerance"),
    "tanh_derivative_sign": (ONE, "eager vs math: backward grad:x0: outside tolerance"),
    "square_derivative_halved": (ONE, "eager vs math: backward grad:x1: outside tolerance"),
    "jvp_tangent_scaled": (ONE, "eager vs math: forward_ad tangent:f0.0: outside tolerance"),
    "grad_outputs_swapped": (ONE, "eager vs math: backward grad:x0: outside tolerance"),
    "double_backward_detached": (dataclasses.replace(ONE, backward="double", forward_ad=False),
                                 "eager vs math: double_backward dgrad:x0"),
    "output_hooks_not_called": (dataclasses.replace(ONE, hooks=(HookSpec("tensor", "f0.0"),)),
                                "eager vs math: backward grad:x0: outside tolerance"),
}
#: what hooks saw is compared across paths only: a native path's node is the reference
SEEN_AGAINST_NATIVE = {
    "node_hooks_not_called": (dataclasses.replace(ONE, hooks=(HookSpec("pre", "f0.0"),)),
                              "owned vs eager: backward hook0: expected (), got ('fired',)"),
    "output_hooks_not_called": (dataclasses.replace(ONE, hooks=(HookSpec("tensor", "f0.0"),)),
                                "owned vs eager: backward hook0: expected (), got ('fired',)"),
}


@pytest.mark.parametrize("style", ["generic", "plain"])
@pytest.mark.parametrize("name, on_native", [(n, False) for n in sorted(SEEN_ON_EAGER)]
                         + [(n, True) for n in sorted(SEEN_AGAINST_NATIVE)])
def test_a_fault_is_seen_only_while_installed(name, on_native, style):
    spec, line = (SEEN_AGAINST_NATIVE if on_native else SEEN_ON_EAGER)[name]
    spec = plain.in_code_style(spec, style)
    chosen = [paths.get("eager")] + ([paths.get("owned")] if on_native else [])
    if any(p.available() is not None for p in chosen):
        pytest.skip("native extension unavailable")
    with selfeval.installed(name):
        report = check(spec, chosen).report()
    assert line in report, report
    assert not check(spec, chosen).failed, "the fault outlived its removal"


@pytest.mark.parametrize("keyword_args", [0, 1])
def test_keyword_binding_in_call_order_is_reached_only_by_keyword_arguments(keyword_args):
    """The axis is what reaches the fault: the same Function called with fewer than two
    keyword arguments binds right even with the fault installed."""
    spec = with_(KEYWORDS, keyword_args=keyword_args)
    with selfeval.installed("keyword_args_bound_in_call_order"):
        verdict = check(spec, [paths.get("eager")])
    assert not verdict.failed, verdict.report()


def test_a_backward_term_dropped_leaves_the_jvp_right():
    with selfeval.installed("sin_backward_term_dropped"):
        report = check(ONE, [paths.get("eager")]).report()
    assert "grad:x0" in report and "tangent:" not in report, report


@pytest.mark.parametrize("name, path", [("compiled_autograd_backward_scaled", "compiled"),
                                        ("aot_backward_miscompiled", "dynamo"),
                                        ("dynamo_traced_backward_scaled", "dynamo")])
def test_a_compiler_fault_shows_on_its_path_only(name, path):
    spec = with_(dataclasses.replace(ONE, forward_ad=False), jvp=False)
    chosen = [paths.get("eager"), paths.get(path)]
    if chosen[1].available() is not None:
        pytest.skip(chosen[1].available())
    with selfeval.installed(name):
        verdict = check(spec, chosen)
    assert verdict.outcomes[path].status == "failed", verdict.report()
    assert verdict.outcomes["eager"].status == "ok", verdict.report()
    assert not check(spec, chosen).failed


def test_the_func_fault_changes_only_a_transformed_function():
    cls = build.build(with_(ONE, style="setup_context")).functions[0]  # what torch.func needs
    x0, x1 = (torch.rand(2, 3, dtype=torch.float64) for _ in range(2))

    def first_output(a, b):
        return cls.apply(a, 2, b)[0].sum()

    plain_value = first_output(x0, x1)
    grad = torch.func.grad(first_output)(x0, x1)
    with selfeval.installed("func_transform_output_scaled"):
        assert torch.equal(first_output(x0, x1), plain_value)  # no transform: untouched
        assert not torch.allclose(torch.func.grad(first_output)(x0, x1), grad)
    assert torch.equal(torch.func.grad(first_output)(x0, x1), grad)


#: x0 * 2 + sin(x1) with generate_vmap_rule, for torch.func.grad of a vmap
VMAPPED = GraphSpec(
    shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec()), backward="backward",
    functions=(FunctionSpec(
        args=(Arg("x0"), Arg("x1")), style="setup_context", vmap=True, save=("inputs",),
        outputs=(OutputSpec(terms=(Term(0, "linear", 2.0), Term(1, "sin", 1.0))),)),))


@pytest.mark.parametrize("batch_shared", [(), (0,), (1,)])
def test_the_reduction_fault_is_reached_only_by_a_leaf_the_batch_shares(batch_shared):
    """grad(vmap) reduces a shared leaf's gradient over the batch (functorch's reductify); with
    every leaf batched there is nothing to reduce, and the fault changes nothing."""
    spec = dataclasses.replace(VMAPPED, batch_shared=batch_shared)
    chosen = [paths.get("eager"), paths.get("func.grad_vmap")]
    with selfeval.installed("reductify_takes_one_sample"):
        verdict = check(spec, chosen, lifetimes=False)
    assert verdict.outcomes["func.grad_vmap"].status == ("failed" if batch_shared else "ok"), verdict.report()
    if batch_shared:
        assert f"grad:x{batch_shared[0]}" in verdict.report(), verdict.report()
    assert not check(spec, chosen, lifetimes=False).failed


@pytest.mark.parametrize("compiled_backward", [False, True])
def test_the_aot_copy_fault_is_reached_only_by_a_compiled_backward(compiled_backward):
    """Compiled autograd copies AOT's backward graph into its own only where it captures the
    backward of a region torch.compile traced: without compiled_backward AOT's backward runs as
    compiled, and the fault changes nothing."""
    spec = dataclasses.replace(VMAPPED, compiled_backward=compiled_backward)
    chosen = [paths.get("eager"), paths.get("dynamo")]
    with selfeval.installed("compiled_autograd_aot_backward_scaled"):
        verdict = check(spec, chosen, lifetimes=False)
    assert verdict.outcomes["dynamo"].status == ("failed" if compiled_backward else "ok"), verdict.report()
    if compiled_backward:
        assert "grad:x" in verdict.report(), verdict.report()
    assert not check(spec, chosen, lifetimes=False).failed


@pytest.mark.parametrize("batch_dim", [0, -1])
def test_the_batch_dim_fault_is_reached_only_by_a_batch_dimension_not_first(batch_dim):
    """The generated vmap rule gets each input's batch dimension from vmap (functorch's
    vmapify_autograd_function); with every batch dimension first, mapping over dim 0 is right, and the
    fault changes nothing."""
    spec = dataclasses.replace(VMAPPED, batch_dim=batch_dim)
    chosen = [paths.get("eager"), paths.get("func.vmap"), paths.get("func.grad_vmap")]
    with selfeval.installed("vmap_rule_batch_dim_taken_as_first"):
        verdict = check(spec, chosen, lifetimes=False)
    for name in ("func.vmap", "func.grad_vmap"):
        assert verdict.outcomes[name].status == ("failed" if batch_dim else "ok"), verdict.report()
    if batch_dim:
        assert "out:f0.0" in verdict.report(), verdict.report()
    assert not check(spec, chosen, lifetimes=False).failed


def _patchable_state() -> dict[str, object]:
    """Everything a fault of the Python families replaces."""
    import torch.autograd.function as function_module
    from torch._dynamo import compiled_autograd, external_utils
    from torch._dynamo.backends import registry
    from torch._dynamo.variables.higher_order_ops import AutogradFunctionApplyVariable
    from torch._dynamo.variables.misc import AutogradFunctionContextVariable
    from torch._functorch.autograd_function import DynamoAutogradFunctionTraceHelper

    registry.lookup_backend("aot_eager")
    return {
        **{f"generic.{n}": getattr(generic, n) for n in ("_backward", "_jvp", "_setup", "_derivative")},
        "plain._derivative": plain._derivative,
        **{f"plain._Writer.{n}": plain._Writer.__dict__[n] for n in ("setup", "backward", "jvp", "_grads_returned")},
        **{f"BackwardCFunction.{n}": BackwardCFunction.__dict__.get(n)
           for n in ("apply", "apply_jvp", "register_hook", "register_prehook", "set_materialize_grads")},
        "Function.apply": torch.autograd.Function.__dict__["apply"],
        "Tensor.register_hook": torch.Tensor.register_hook,
        "run._saved_tensor_hooks": run._saved_tensor_hooks,
        "call_backward": (external_utils.call_backward, compiled_autograd.call_backward),
        "aot_eager": registry._COMPILER_FNS["aot_eager"],
        "custom_function_call": function_module.custom_function_call,
        "custom_function_call_vmap_helper": torch._functorch.autograd_function.custom_function_call_vmap_helper,
        "reductify_leaf": torch._functorch.autograd_function.reductify_leaf,
        "vmapify_autograd_function": torch._functorch.autograd_function.vmapify_autograd_function,
        **{f"AutogradFunctionContextVariable.{n}": AutogradFunctionContextVariable.__dict__[n]
           for n in ("create", "call_method", "var_getattr")},
        "AutogradFunctionApplyVariable.prepare_fn_vt": AutogradFunctionApplyVariable.prepare_fn_vt,
        "fwd_trace_helper": DynamoAutogradFunctionTraceHelper.__dict__["fwd_trace_helper"],
        **{f"AutogradCompilerInstance.{n}": compiled_autograd.AutogradCompilerInstance.__dict__[n]
           for n in ("tensor_pre_hook", "post_hook", "proxy_call_aot_backward")},
    }


@pytest.mark.parametrize("name", [f.name for f in selfeval.FAULTS if f.family != "native"])
def test_removing_a_fault_restores_everything(name):
    before = _patchable_state()
    remove = selfeval.install(name)
    changed = {k for k, v in _patchable_state().items() if v != before[k]}
    remove()
    assert changed, f"{name} installs nothing this test watches"
    assert _patchable_state() == before


def test_the_catalog():
    evaluated = [f for f in selfeval.FAULTS if f.evaluated]
    assert len(evaluated) >= 20
    assert len(selfeval.CATALOG) == len(selfeval.FAULTS)
    assert {f.family for f in evaluated} == {"formulas", "autograd", "compilers", "dynamo", "forms", "lifetimes",
                                             "native"}
    assert all(f.description and f.paths for f in selfeval.FAULTS)
    assert max(len(f.name) for f in selfeval.FAULTS) <= evaluate.NAME_WIDTH  # the table's columns line up
    with pytest.raises(KeyError, match="no seeded fault 'nope'"):
        selfeval.get("nope")


def test_selfeval_runs_a_fault_end_to_end(tmp_path):
    out = tmp_path / "table.json"
    done = subprocess.run(
        # leak_input: found on a path, so it has a reproducer (wrong_backward is often found first by
        # gradcheck, which writes none)
        [sys.executable, "-m", "harness", "selfeval", "--faults", "leak_input", "--budget-per-fault", "40s",
         "--json", str(out), "--out", str(tmp_path / "failures")], capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(out.read_text())["faults"]
    assert row["status"] == "detected" and row["seconds"] <= 40 and row["examples"] >= 1, row
    assert row["repro_lines"] > 0 and row["reproducer"].endswith(".py")
    assert "leak_input" in done.stdout and "detected 1 of 1 run" in done.stdout


#: one generic Function with 24 tensor inputs (x0 each time): crash_wide aborts on it
WIDE_SPEC = GraphSpec(shape=(3,), dtype="float64", leaves=(LeafSpec(),), functions=(
    FunctionSpec(args=(Arg("x0"),) * 24, outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0),)),),
                 tuple_output=False),))


def test_a_crash_counts_only_if_its_example_runs_clean_without_the_fault(tmp_path, monkeypatch):
    """Not any crash or hang of selfeval's worker is a detection (an unrelated SystemExit(1) would
    turn a missed fault into "detected"): the example the worker died on runs again in a child
    process with no fault installed, and only a clean run makes it the fault's."""
    # this process's environment carries a fault (as a selfeval worker's may): the rerun drops it
    for key, value in selfeval.subprocess_env("crash_wide", {}).items():
        monkeypatch.setenv(key, value)
    spec_file = tmp_path / "wide.json"
    spec_file.write_text(WIDE_SPEC.to_json())
    with_fault = subprocess.run([sys.executable, "-m", "harness", "check", str(spec_file), "--paths", "eager"],
                                capture_output=True, text=True, timeout=300, check=False)
    assert with_fault.returncode < 0, with_fault.stderr[-2000:]  # the spec is one the fault kills (SIGABRT)
    assert evaluate.runs_clean_without_faults(WIDE_SPEC.to_json(), ["eager"], tmp_path)
    assert not evaluate.runs_clean_without_faults(None, ["eager"], tmp_path)  # no example: nothing to tell
