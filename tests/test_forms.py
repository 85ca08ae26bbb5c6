"""Two more ways of writing the same Function: a torch.library.custom_op (FunctionSpec.api) and
a hand-written vmap staticmethod (FunctionSpec.vmap_rule). Real runs through check(): the math
oracle and eager must agree with every path that runs them, and the seeded faults of the two
forms must change a real result."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import custom_op, known_issues, paths, selfeval
from harness.build import build
from harness.check import check
from harness.paths.native import ALL_CUSTOM_OPS, NativePath
from harness.spec import (Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, SpecError, Term, as_custom_op,
                          custom_op_limit, custom_op_name, with_user_vmap_rule)
from strategies import function_specs

#: a Function of three arguments (a constant among them) and three outputs (one constant, one
#: marked non-differentiable), reading needs_input_grad at forward and backward, with
#: materialize_grads off and generate_vmap_rule; the second reads the first's outputs
FIRST = FunctionSpec(
    args=(Arg("x0"), Arg(const=2.5), Arg("x1")),
    outputs=(OutputSpec(terms=(Term(0, "sin", 1.5), Term(2, "linear", -0.5)), bias=0.25),
             OutputSpec(kind="const", value=3),
             OutputSpec(terms=(Term(2, "square"),)),
             OutputSpec(terms=(Term(0, "tanh"),), non_differentiable=True)),
    style="setup_context", save=("inputs",), vmap=True, needs_input_grad="saved", materialize_grads=False)
SECOND = FunctionSpec(
    args=(Arg("f0.0"), Arg("f0.2"), Arg("x1")),
    outputs=(OutputSpec(terms=(Term(0, "tanh"), Term(1, "linear", 2.0), Term(2, "sin", -1.0))),),
    style="setup_context", save=("intermediates",), vmap=True, tuple_output=False, ctx_state=True)


def graph(*functions: FunctionSpec, backward: str = "backward") -> GraphSpec:
    return GraphSpec(shape=(2, 3), leaves=(LeafSpec(), LeafSpec(layout="transposed")), functions=functions,
                     backward=backward, seed=3)


def as_ops(*functions: FunctionSpec) -> tuple[FunctionSpec, ...]:
    converted = tuple(as_custom_op(fn) for fn in functions)
    assert all(fn is not None and fn.api == "custom_op" for fn in converted)
    return converted  # type: ignore[return-value]


def as_user_rules(*functions: FunctionSpec) -> tuple[FunctionSpec, ...]:
    converted = tuple(with_user_vmap_rule(fn) for fn in functions)
    assert all(fn is not None and fn.vmap_rule == "user" for fn in converted)
    return converted  # type: ignore[return-value]


def outcomes(spec: GraphSpec, names: str) -> dict[str, tuple[str, str]]:
    verdict = check(spec, paths.parse(names))
    return {name: (o.status, o.reason) for name, o in verdict.outcomes.items()}


# --- the spec: defaults, JSON, validation ------------------------------------------------------


def test_defaults_are_todays_forms():
    fn = FunctionSpec()
    assert (fn.api, fn.vmap_rule) == ("function", "generate")
    old_json = graph(FIRST).to_json().replace('"api": "function", ', "").replace(', "vmap_rule": "generate"', "")
    assert '"api"' not in old_json and '"vmap_rule"' not in old_json  # a spec file written before the fields
    assert GraphSpec.from_json(old_json) == graph(FIRST)


@pytest.mark.parametrize("functions", [as_ops(FIRST, SECOND), as_user_rules(FIRST, SECOND)])
def test_json_round_trip(functions):
    spec = graph(*functions)
    assert GraphSpec.from_json(spec.to_json()) == spec


@settings(max_examples=60)
@given(function_specs(values=("x0", "x1")), st.sampled_from([as_custom_op, with_user_vmap_rule]))
def test_every_converted_function_validates_and_round_trips(fn, convert):
    converted = convert(fn)
    if converted is None:  # only where the form cannot hold this Function
        if convert is as_custom_op:
            assert custom_op_limit(dataclasses.replace(fn, api="custom_op", style="setup_context", code="generic",
                                                       backward_method="backward", vmap_rule="generate"))
        else:
            assert not fn.vmap
        return
    spec = GraphSpec(leaves=(LeafSpec(), LeafSpec()), functions=(converted,))  # validates
    assert GraphSpec.from_json(spec.to_json()) == spec
    # the math is the Function's own: only the form's fields differ
    same = ("args", "outputs", "tuple_output", "save", "materialize_grads", "needs_input_grad", "unused_grad",
            "once_differentiable", "vmap", "ctx_state", "untraceable", "nested")
    assert all(getattr(converted, f) == getattr(fn, f) for f in same)


@pytest.mark.parametrize("change, words", [
    (dict(outputs=(OutputSpec(kind="input", slot=0),)), "may not alias any inputs to this custom operator"),
    (dict(outputs=(OutputSpec(kind="view", slot=0),)), "may not alias any inputs to this custom operator"),
    (dict(args=(Arg("x0", clone=True),), outputs=(OutputSpec(kind="dirty", slot=0),)),
     "Cannot register autograd formula for non-functional operator"),
    (dict(jvp=True), "a custom_op has no forward-mode AD"),
    (dict(style="old"), "a custom_op is written in setup_context style"),
    (dict(args=(Arg(const=1),), outputs=(OutputSpec(),)), "required to have a `device: torch.device` argument"),
    (dict(outputs=(OutputSpec(kind="const", value=1),)), "has none"),
    (dict(args=(Arg("x0"), Arg(const=1)), error="grad_for_nontensor"), "deliberate error cases"),
    (dict(code="plain", vmap=True), "harness/plain.py writes no register_vmap rule"),
    (dict(backward_method="vjp"), "there is no 'vjp' method name"),
])
def test_what_cannot_be_a_custom_op_is_one_sentence_with_its_source(change, words):
    base = FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0),)),), style="setup_context",
                        api="custom_op")
    with pytest.raises(SpecError, match="functions\\[0\\].api='custom_op' is invalid: this Function cannot be a "
                                        "custom_op: .*" + words.replace("(", "\\(").replace(")", "\\)")):
        GraphSpec(leaves=(LeafSpec(),), functions=(dataclasses.replace(base, **change),))
    converted = as_custom_op(dataclasses.replace(base, api="function", **change))
    if set(change) & {"style", "code", "backward_method"}:  # forms a custom_op has no choice of: its own
        assert converted is not None and (converted.style, converted.backward_method) == ("setup_context", "backward")
        assert converted.code == ("generic" if converted.vmap else change.get("code", "generic"))
    else:
        assert converted is None


@pytest.mark.parametrize("change, words", [
    (dict(vmap=False), "set vmap=True with it"),
    (dict(api="custom_op"), "a custom_op's vmap rule is its register_vmap"),
    (dict(code="plain"), "writes no vmap staticmethod yet: use code='generic'"),
    (dict(vmap_rule="hand"), "choose one of \\('generate', 'user'\\)"),
])
def test_user_vmap_rule_validation(change, words):
    fn = dataclasses.replace(FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0),)),),
                                          style="setup_context", vmap=True, vmap_rule="user"), **change)
    with pytest.raises(SpecError, match=words):
        GraphSpec(leaves=(LeafSpec(),), functions=(fn,))


def test_unknown_api():
    with pytest.raises(SpecError, match="functions\\[0\\].api='op' is invalid: choose one of "
                                        "\\('function', 'custom_op'\\)"):
        GraphSpec(leaves=(LeafSpec(),), functions=(FunctionSpec(api="op"),))


def test_user_vmap_rule_needs_vmap_support_to_replace():
    assert with_user_vmap_rule(dataclasses.replace(FIRST, vmap=False)) is None
    assert with_user_vmap_rule(as_custom_op(FIRST)) is None
    assert with_user_vmap_rule(FIRST).vmap_rule == "user"


# --- real runs: eager, the math oracle and the paths agree ----------------------------------------


def test_custom_op_graph_agrees_with_eager_and_math_on_every_path_that_runs_it():
    spec = graph(*as_ops(FIRST, SECOND))
    got = outcomes(spec, "eager,compiled,dynamo,func.vmap,func.vmap.user,func.grad,func.jvp")
    assert {name: status for name, (status, _) in got.items()} == {
        "eager": "ok", "compiled": "ok", "dynamo": "ok", "func.vmap": "ok", "func.vmap.user": "ok",
        "func.grad": "ok", "func.jvp": "ok"}, got


ZERO_TANGENT = "func-custom-op-forward-ad-zero-tangent"


def test_jacfwd_of_a_custom_op_drops_its_part_of_the_gradients_as_the_entry_says(monkeypatch):
    """torch.func.jacfwd gives a custom_op a zero tangent (func-custom-op-forward-ad-zero-tangent):
    the gradients of the leaves its outputs depend on differ from eager's, and the entry explains
    exactly those; the graph is then checked on the entry's workaround (the op as a Function with
    a jvp). A custom_op read only from a leaf that is not differentiated loses nothing."""
    spec = graph(*as_ops(FIRST, SECOND))
    outcome = check(spec, paths.parse("eager,func.jacfwd")).outcomes["func.jacfwd"]
    assert (outcome.status, outcome.known) == ("ok", (ZERO_TANGENT,)), outcome
    assert outcome.checked_spec is not None and all(fn.api == "function" for fn in outcome.checked_spec.functions)
    constant = dataclasses.replace(
        spec, leaves=(LeafSpec(), LeafSpec(layout="transposed", requires_grad=False)),
        functions=(as_custom_op(dataclasses.replace(FIRST, args=(Arg("x1"), Arg(const=2.5), Arg("x1")))),
                   dataclasses.replace(SECOND, args=(Arg("f0.0"), Arg("f0.2"), Arg("x0")), jvp=True)))
    assert not known_issues.by_ids([ZERO_TANGENT])[0].trigger(constant)
    assert outcomes(constant, "eager,func.jacfwd")["func.jacfwd"] == ("ok", "")
    # without the entry, the same run fails in exactly the roles it names
    monkeypatch.setattr(known_issues, "KNOWN_ISSUES", tuple(k for k in known_issues.KNOWN_ISSUES
                                                           if k.id != ZERO_TANGENT))
    raw = check(spec, paths.parse("eager,func.jacfwd")).outcomes["func.jacfwd"]
    assert raw.status == "failed"
    assert {(m.against, m.checkpoint, m.role) for m in raw.mismatches} == {
        (against, "backward", role) for against in ("math", "eager") for role in ("grad:x0", "grad:x1")}


def test_custom_op_really_runs_as_an_op():
    built = build(graph(*as_ops(FIRST, SECOND)))
    leaves = built.make_leaves()
    out = built.functions[0].apply(leaves[0], 2.5, leaves[1])
    assert out[1] == 3  # the wrapper returns the constant output
    assert type(out[0].grad_fn).__name__.startswith("GeneratedBackwardFor_afh_g")  # torch/_library/autograd.py
    assert not out[3].requires_grad  # mark_non_differentiable in setup_context


def test_custom_op_double_backward_and_mixed_graph():
    mixed = graph(as_custom_op(FIRST), dataclasses.replace(SECOND, save=("inputs",)), backward="double")
    got = outcomes(mixed, "eager,compiled")
    assert got["eager"][0] == "ok" and got["compiled"][0] == "ok", got


def test_custom_op_without_register_vmap_runs_on_torch_s_batching_fallback():
    spec = graph(*as_ops(dataclasses.replace(FIRST, vmap=False), dataclasses.replace(SECOND, vmap=False)))
    for cls in build(spec).functions:  # no batching rule: BatchedFallback.cpp loops over the samples
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(cls.op._qualname, "FuncTorchBatched")
    for cls in build(graph(*as_ops(FIRST, SECOND))).functions:  # (register_vmap's kernel)
        assert torch._C._dispatch_has_kernel_for_dispatch_key(cls.op._qualname, "FuncTorchBatched")
    assert outcomes(spec, "func.vmap")["func.vmap"][0] == "ok"


def test_native_paths_with_custom_ops():
    path = NativePath("owned")
    assert path.unsupported(graph(*as_ops(FIRST, SECOND))) == ALL_CUSTOM_OPS
    mixed = graph(as_custom_op(FIRST), SECOND)
    assert path.unsupported(mixed) is None  # the Function still runs through C++
    if path.available() is None:  # (the extension builds here)
        assert {status for status, _ in outcomes(mixed, "eager,owned,borrowed").values()} == {"ok"}


def test_user_vmap_rule_graph_agrees_with_eager_and_math():
    spec = graph(*as_user_rules(FIRST, SECOND))
    got = outcomes(spec, "eager,compiled,func.vmap,func.grad,func.vmap_grad,func.grad_vmap")
    assert all(status == "ok" for status, _ in got.values()), got
    built = build(spec)
    assert all(cls.generate_vmap_rule is False and "vmap" in cls.__dict__ for cls in built.functions)


def test_user_vmap_rule_under_dynamo():
    spec = graph(*as_user_rules(FIRST, SECOND))
    verdict = check(spec, paths.parse("dynamo"))
    outcome = verdict.outcomes["dynamo"]
    # the generic style's closures meet known Dynamo issues: checked past them on their workaround (never
    # stopped there, never a failure). What was checked is said exactly: the same Functions in the plain
    # style, which has no user vmap rule (dynamo-function-closure-object's workaround), and a constant
    # output computed instead (dynamo-mark-non-differentiable-index-shifted's); forward and backward compared
    assert outcome.status in ("ok", "partly") and outcome.known, verdict.report()
    for original, checked in zip(spec.functions, outcome.checked_spec.functions):
        differing = {f.name for f in dataclasses.fields(FunctionSpec) if getattr(original, f.name) != getattr(checked, f.name)}
        assert differing <= {"code", "vmap_rule", "outputs"}, differing
    compared = {checkpoint for checkpoint, roles in outcome.result.tensors.items() if roles}
    assert {"forward", "backward"} <= compared, compared


def test_registrations_are_cached_by_the_function_spec():
    spec = graph(*as_ops(FIRST, SECOND))
    build(spec)
    outcomes(spec, "eager,func.vmap")  # registers the vmap rule's batched ops, once
    before = custom_op.registrations()
    for _ in range(3):
        build(spec)
        outcomes(spec, "eager,func.vmap")
    assert custom_op.registrations() == before  # (the vmap rule's batched ops are cached too)
    other = graph(*as_ops(FIRST, dataclasses.replace(SECOND, outputs=(OutputSpec(terms=(Term(0, "tanh", 0.5),)),))))
    build(other)
    assert custom_op.registrations() == before + 1  # one new Function spec, one new op
    assert custom_op_name(FIRST, 0, (2, 3), torch.float64, torch.device("cpu")).startswith("afh::g")


# --- seeded faults of the two forms --------------------------------------------------------------


def test_compiled_autograd_custom_op_fault_changes_a_real_result():
    spec = graph(*as_ops(FIRST, SECOND))
    assert outcomes(spec, "compiled")["compiled"][0] == "ok"
    with selfeval.installed("compiled_autograd_custom_op_grads_rotated"):
        assert outcomes(spec, "eager")["eager"][0] == "ok"  # eager autograd: untouched
        assert outcomes(spec, "compiled")["compiled"][0] == "failed"
        # the same math as autograd.Functions: untouched
        assert outcomes(graph(FIRST, SECOND), "compiled")["compiled"][0] == "ok"
    assert outcomes(spec, "compiled")["compiled"][0] == "ok"


def test_register_vmap_fault_changes_a_real_result():
    spec = graph(*as_ops(FIRST, SECOND))
    assert outcomes(spec, "func.vmap")["func.vmap"][0] == "ok"
    with selfeval.installed("vmap_custom_op_samples_rolled"):
        assert outcomes(spec, "func.vmap")["func.vmap"][0] == "failed"
        # a user vmap staticmethod goes through the same helper: untouched
        assert outcomes(graph(*as_user_rules(FIRST, SECOND)), "func.vmap")["func.vmap"][0] == "ok"
    assert outcomes(spec, "func.vmap")["func.vmap"][0] == "ok"


def test_grad_vmap_user_rule_fault_changes_a_real_result():
    spec = graph(*as_user_rules(FIRST, SECOND))
    assert outcomes(spec, "func.grad_vmap")["func.grad_vmap"][0] == "ok"
    with selfeval.installed("grad_vmap_user_rule_samples_rolled"):
        assert outcomes(spec, "func.grad_vmap")["func.grad_vmap"][0] == "failed"
        assert outcomes(spec, "func.vmap")["func.vmap"][0] == "ok"  # vmap alone: untouched
        assert outcomes(graph(FIRST, SECOND), "func.grad_vmap")["func.grad_vmap"][0] == "ok"  # generate_vmap_rule
    assert outcomes(spec, "func.grad_vmap")["func.grad_vmap"][0] == "ok"


@pytest.mark.parametrize("forward_code", ["loop", "straight"])
def test_dynamo_counts_a_custom_op_as_traced(forward_code):
    from harness.paths.dynamo import dynamo_path

    spec = dataclasses.replace(graph(*as_ops(FIRST, SECOND)), forward_code=forward_code)
    result = dynamo_path("aot_eager").run(build(spec))
    assert result.status == "ok" and result.trace == {"ways": ["traced", "traced"], "example": "traced"}


def test_gradcheck_of_a_custom_op_graph():
    from harness.oracles.math import gradcheck_graph

    small = dataclasses.replace(graph(*as_ops(FIRST, SECOND)), shape=(1, 2))
    assert gradcheck_graph(small)


def test_a_custom_op_reproducer_runs_standalone(tmp_path):
    """The reproducer embeds harness.custom_op, registers the ops itself and runs to the end."""
    import subprocess
    import sys

    from harness.repro import write_reproducer

    spec = graph(*as_ops(FIRST, SECOND))
    verdict = check(spec, paths.parse("eager,func.vmap"), lifetimes=False)
    script = write_reproducer(spec, ["eager", "func.vmap"], "cpu", verdict.report(), tmp_path / "repro.py",
                              verdict=verdict)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


def test_least_recently_used_ops_are_deregistered(monkeypatch):
    monkeypatch.setattr(custom_op, "OPS_KEPT", 1)
    cpu = torch.device("cpu")
    first = custom_op.make_custom_op_function(as_custom_op(FIRST), 0, (2, 3), torch.float64, cpu)
    name = first.op._qualname
    assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "Autograd")
    custom_op.make_custom_op_function(as_custom_op(FIRST), 5, (2, 3), torch.float64, cpu)  # pushes it out
    with pytest.raises(RuntimeError):  # deregistered: the dispatcher has no such op any more
        torch._C._dispatch_has_kernel_for_dispatch_key(name, "Autograd")
    again = custom_op.make_custom_op_function(as_custom_op(FIRST), 0, (2, 3), torch.float64, cpu)
    leaves = build(graph(FIRST, SECOND)).make_leaves()
    assert torch.equal(again.apply(leaves[0], 2.5, leaves[1])[0], build(graph(FIRST, SECOND)).functions[0].apply(
        leaves[0], 2.5, leaves[1])[0])  # registered again under the same name, the same values
    custom_op.clear()


def test_a_custom_op_s_side_effect_is_recorded_and_compared():
    from harness.paths.eager import EagerPath
    from harness.run import META

    spec = graph(*as_ops(dataclasses.replace(FIRST, untraceable="side_effect"), SECOND))
    result = EagerPath().run(build(spec))
    assert result.values[META + "forward"]["side_effects"] == (0,)  # the op's kernel ran the forward once
    got = outcomes(spec, "eager,dynamo,compiled")
    assert all(status == "ok" for status, _ in got.values()), got


def test_a_plain_custom_op_computes_what_the_generic_one_does():
    """The plain style writes the op's registrations as source text (harness.plain._OpWriter):
    bit-identical results, and the paths agree."""
    from harness import plain
    from harness.paths.eager import EagerPath

    generic = graph(*as_ops(dataclasses.replace(FIRST, vmap=False), dataclasses.replace(SECOND, vmap=False)))
    in_plain = plain.in_code_style(generic, "plain")
    assert all(fn.api == "custom_op" and fn.code == "plain" for fn in in_plain.functions)
    source = build(in_plain).functions[0].source
    assert "@torch.library.custom_op('afh::g" in source and ".register_autograd(F0_op_backward" in source
    ours, theirs = EagerPath().run(build(generic)), EagerPath().run(build(in_plain))
    compared = 0
    for checkpoint, roles in ours.tensors.items():
        for role, t in roles.items():
            other = theirs.tensors[checkpoint][role]
            assert (t is None and other is None) or torch.equal(t, other), (checkpoint, role)
            compared += t is not None
    assert compared >= 6  # outputs and gradients
    got = outcomes(in_plain, "eager,compiled,dynamo,func.vmap")
    assert all(status == "ok" for status, _ in got.values()), got


def test_a_plain_custom_op_reproducer_registers_its_own_ops(tmp_path):
    """A failure that the plain style shows too is written with the ops' source in the script,
    which registers them itself: it fails with the fault and runs clean without it."""
    import subprocess
    import sys

    from harness.repro import write_reproducer

    spec = graph(*as_ops(dataclasses.replace(FIRST, vmap=False), dataclasses.replace(SECOND, vmap=False)))
    with selfeval.installed("compiled_autograd_custom_op_grads_rotated"):
        verdict = check(spec, paths.parse("compiled"), lifetimes=False)
        assert verdict.failed
        script = write_reproducer(spec, ["compiled"], "cpu", verdict.report(), tmp_path / "repro.py", verdict=verdict)
    text = script.read_text()
    assert "@torch.library.custom_op('afh::g" in text and "from harness" not in text
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    faulty = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                            env=selfeval.subprocess_env("compiled_autograd_custom_op_grads_rotated"))
    assert faulty.returncode == 1 and "FAILS: compiled:capture differs from" in faulty.stderr, faulty.stderr[-2000:]


@pytest.mark.parametrize("issue", ["dynamo-function-varargs-forward", "dynamo-function-class-attribute"])
def test_dynamo_s_generic_class_issues_do_not_trigger_on_custom_ops(issue):
    """Dynamo never traces into an op's kernel (torch._disable_dynamo), so the known issues of
    tracing a generic Function class cannot explain what a custom_op does."""
    from harness import known_issues

    (entry,) = known_issues.by_ids([issue])
    assert entry.triggered(graph(FIRST, SECOND), "dynamo")
    assert not entry.triggered(graph(*as_ops(FIRST, SECOND)), "dynamo")
