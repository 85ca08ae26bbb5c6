"""The twin-form oracle (harness/oracles/twins.py): each pair's twin is a valid spec that
computes the same math, twins agree with the original on eager and the compiled paths on
real torch runs, and a seeded fault in one form's handling is reported naming the pair,
where the other oracles see nothing."""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given, settings

import harness
import strategies
from harness import paths, selfeval
from harness.build import build
from harness.campaign import run_campaign
from harness.results import CampaignResult
from harness.shrink import twins_of_cause
from harness.check import check
from harness.oracles import twins
from harness.oracles.compare import EXACT, compare
from harness.oracles.math import run_math
from harness.records import cause_of
from harness.repro import write_reproducer
from harness.run import RunResult
from harness.spec import Arg, FunctionSpec, GraphSpec, HookSpec, LeafSpec, OutputSpec, Term

EAGER = paths.get("eager")

#: one Function of two outputs reading two leaves, nonlinear terms, saved inputs
BASE = GraphSpec(
    shape=(2, 3), dtype="float64", leaves=(LeafSpec(), LeafSpec()),
    functions=(FunctionSpec(
        args=(Arg("x0"), Arg(const=2), Arg("x1")),
        outputs=(OutputSpec(terms=(Term(0, "sin", 1.5), Term(2, "square", -0.5))),
                 OutputSpec(terms=(Term(0, "tanh", 0.75), Term(2, "linear", 2.0)))),
        save=("inputs",)),),
    backward="backward")


def with_(spec: GraphSpec, **fields) -> GraphSpec:
    return dataclasses.replace(spec, functions=tuple(dataclasses.replace(fn, **fields) for fn in spec.functions))


#: one output (alone, not in a tuple), so that every pair applies (but vmap_rule: VMAPPED)
ONE_OUTPUT = with_(BASE, outputs=(BASE.functions[0].outputs[0],), tuple_output=False)
#: the same with generate_vmap_rule (which needs setup_context): the vmap_rule pair applies
VMAPPED = with_(ONE_OUTPUT, vmap=True, style="setup_context")
#: a chain of two Functions, the second in setup_context style with vjp and materialize_grads=False
CHAIN = GraphSpec(
    shape=(3,), dtype="float64", leaves=(LeafSpec(), LeafSpec()),
    functions=(ONE_OUTPUT.functions[0],
               FunctionSpec(args=(Arg("f0.0"), Arg("x1")), outputs=(OutputSpec(terms=(Term(0, "tanh"), Term(1))),),
                            style="setup_context", backward_method="vjp", materialize_grads=False,
                            save=("inputs",), unused_grad="zeros")),
    backward="grad")


def _math(spec: GraphSpec) -> RunResult:
    return run_math(build(spec))


@pytest.mark.parametrize("pair", twins.PAIR_NAMES)
def test_each_pair_applies_to_a_one_output_function(pair: str) -> None:
    spec = VMAPPED if pair == "vmap_rule" else ONE_OUTPUT
    twin = twins.twin_of(spec, pair)
    assert twin is not None and twin.spec != spec
    assert twin.flips.startswith("F0 ")
    assert twin.label == f"twin {pair} ({twin.flips})"


@settings(max_examples=25)
@given(strategies.graphs())
def test_every_twin_is_a_valid_spec_with_the_same_math(spec: GraphSpec) -> None:
    """The twin validates (on construction and through its JSON round trip) and the math oracle,
    which reads the same ops from it, gives bit-identical results."""
    math = None
    for pair in twins.PAIRS:
        twin = twins.twin_of(spec, pair)
        if twin is None:
            continue
        assert GraphSpec.from_json(twin.spec.to_json()) == twin.spec
        changed = [n for n, (a, b) in enumerate(zip(spec.functions, twin.spec.functions)) if a != b]
        assert changed and all(f"F{n} " in twin.flips for n in changed)
        for a, b in zip(spec.functions, twin.spec.functions):  # the pair's own fields only
            differing = {f.name for f in dataclasses.fields(FunctionSpec) if getattr(a, f.name) != getattr(b, f.name)}
            # (api and vmap_rule also take the forms their other side has no choice of: a custom_op
            # is setup_context with a backward method, a user vmap rule and a vmapped custom_op are
            # written in the generic code style)
            assert differing <= {"style", "backward_method", "tuple_output", "once_differentiable",
                                 "materialize_grads", "api", "vmap_rule", "code"}, differing
        math = math or _math(spec)
        assert compare(math, _math(twin.spec), EXACT) == []


def test_once_differentiable_has_no_twin_under_double_backward() -> None:
    """The declared exception: a once_differentiable backward cannot run twice."""
    assert twins.twin_of(dataclasses.replace(BASE, backward="double"), "once_differentiable") is None
    assert twins.twin_of(BASE, "once_differentiable") is not None
    assert twins.exception_for("style", "func.grad", BASE) is not None
    assert twins.exception_for("style", "func.vmap+dynamo", BASE) is not None
    assert twins.exception_for("style", "dynamo", BASE) is None


def test_the_pair_is_chosen_from_the_spec_alone() -> None:
    names = ["eager", "compiled"]
    assert twins.choose(CHAIN, names).pair == twins.choose(GraphSpec.from_json(CHAIN.to_json()), names).pair
    assert twins.choose(CHAIN, names, forced="tuple_output").pair.name == "tuple_output"
    # every style twin is excepted on torch.func paths: another pair is chosen there
    assert all(twins.choose(dataclasses.replace(BASE, seed=s), ["func.grad"]).pair.name != "style"
               for s in range(20))


def test_a_cause_names_its_pair() -> None:
    assert twins.pair_of_cause("mismatch vs twin style at backward grad") == "style"
    assert twins.pair_of_cause("mismatch vs eager at backward grad") is None
    assert twins_of_cause("mismatch vs twin materialize_grads at backward grad") == "materialize_grads"
    assert twins_of_cause("mismatch vs math at backward grad") is False


@pytest.mark.parametrize("spec", [BASE, ONE_OUTPUT, CHAIN, dataclasses.replace(CHAIN, backward="retain")],
                         ids=["base", "one-output", "chain", "chain-retain"])
@pytest.mark.parametrize("pair", twins.PAIR_NAMES)
def test_twins_agree_on_eager_exactly(spec: GraphSpec, pair: str) -> None:
    verdict = check(spec, [EAGER], lifetimes=False, twins=pair)
    if verdict.twin is None:  # the pair changes no Function of this spec
        assert twins.twin_of(spec, pair) is None
        return
    assert verdict.twin.paths["eager"].status == "ok", verdict.twin.paths
    assert not verdict.failed, verdict.report()


@pytest.mark.parametrize("pair", [p.name for p in twins.PAIRS if "*" in p.paths])  # (vmap_rule: torch.func only)
def test_twins_agree_on_the_compiled_paths(pair: str) -> None:
    """compiled autograd and torch.compile: the twin is compared, or a known torch issue explains
    every difference (compiled autograd ignores a `vjp` method: ca-function-vjp-ignored; for api,
    the custom_op twin has a backward method and no class for Dynamo to read attributes of, so the
    original's ca-function-vjp-ignored and dynamo-function-class-attribute explain both paths)."""
    chosen = [paths.get("compiled"), paths.get("dynamo")]
    verdict = check(CHAIN, [EAGER, *chosen], lifetimes=False, twins=pair)
    assert not verdict.failed, verdict.report()
    statuses = {name: r.counted_as for name, r in verdict.twin.paths.items()}
    assert statuses["eager"] == "ok"
    if pair in AS_EAGER_ON_COMPILED:  # compiled runs what differs eagerly, as eager, where the twin agreed
        assert statuses.pop("compiled") == "as eager"
    assert set(statuses.values()) <= {"ok", "known"}, statuses
    # a known issue explains only what it damages: the rest of the twin was compared there and agreed
    for name in ("compiled", "dynamo"):
        twin = verdict.twin.paths[name]
        if twin.status == "known":
            damaged = {(m.checkpoint, m.role) for m in twin.mismatches}
            compared = {(c, role) for c, roles in verdict.outcomes[name].result.tensors.items() for role in roles}
            assert twin.mismatches and compared - damaged, (name, twin.detail, sorted(compared), sorted(damaged))


def _compiled_run_of(spec: GraphSpec) -> RunResult:
    return paths.run_path(paths.get("compiled"), build(spec))


#: the pairs whose twin compiled autograd does not run again where eager's twin agreed (Pair.as_eager_on)
AS_EAGER_ON_COMPILED = [p.name for p in twins.PAIRS if "compiled" in p.as_eager_on]


def test_the_pairs_not_run_again_on_compiled_are_the_forward_only_ones() -> None:
    assert AS_EAGER_ON_COMPILED == ["style", "tuple_output"]


@pytest.mark.parametrize("pair", AS_EAGER_ON_COMPILED)
@settings(max_examples=10, deadline=None)
@given(spec=strategies.graphs())
def test_where_compiled_is_not_run_on_its_twin_that_run_would_be_the_originals(pair: str, spec: GraphSpec) -> None:
    """Pair.as_eager_on: style and tuple_output on compiled autograd. Wherever eager's twin agrees with
    eager, the twin's run on compiled is bit for bit the original's (values, metadata, errors), so
    running it cannot change what the twin oracle finds there."""
    twin = twins.twin_of(spec, pair)
    assume(twin is not None and spec.backward != "none")
    assume(not twins.compare_twins(spec, twin, paths.run_path(EAGER, build(spec)),
                                   paths.run_path(EAGER, build(twin.spec)), EXACT))  # eager's twin agrees
    original, mirrored = _compiled_run_of(spec), _compiled_run_of(twin.spec)
    assert (original.status, type(original.error)) == (mirrored.status, type(mirrored.error))
    assert twins.compare_twins(spec, twin, original, mirrored, EXACT) == []


def test_a_twin_is_run_on_compiled_where_eager_s_twin_differs() -> None:
    """A fault of the single-output form (its pre hook fires twice): eager's twin differs, so compiled
    runs its twin too, and sees the difference there."""
    pair, spec, _ = FORMS_FAULTS["single_output_pre_hooks_twice"]
    compiled = paths.get("compiled")
    assert check(spec, [EAGER, compiled], lifetimes=False, twins=pair).twin.paths["compiled"].counted_as == "as eager"
    with selfeval.installed("single_output_pre_hooks_twice"):
        found = check(spec, [EAGER, compiled], lifetimes=False, twins=pair)
    assert found.twin.paths["eager"].status == "failed"
    assert found.twin.paths["compiled"].status == "failed", found.twin.paths["compiled"]


def _with_hook(spec: GraphSpec, kind: str) -> GraphSpec:
    return dataclasses.replace(spec, hooks=(HookSpec(kind, "f0.0"),))


#: fault -> (its pair, a spec where it shows, the line the report names)
FORMS_FAULTS = {
    "setup_context_pre_hooks_dropped": ("style", _with_hook(with_(ONE_OUTPUT, style="setup_context"), "pre"),
                                        "eager vs twin style: backward hook0: expected ('fired',), got ()"),
    "single_output_pre_hooks_twice": ("tuple_output", _with_hook(ONE_OUTPUT, "pre"),
                                      "eager vs twin tuple_output: backward hook0: expected ('fired',), "
                                      "got ('fired', 'fired')"),
    "vjp_grads_last_bit": ("backward_method", with_(BASE, backward_method="vjp"),
                           "eager vs twin backward_method: backward grad:x0: not bit-identical"),
    "once_differentiable_grads_last_bit": ("once_differentiable", BASE,
                                           "eager vs twin once_differentiable: backward grad:x0: not bit-identical"),
    "materialize_off_zero_grads_dropped": (
        # x1 (slot 2) is read by no output: its gradient is the zeros of unused_grad="zeros"
        "materialize_grads", with_(BASE, materialize_grads=False, unused_grad="zeros",
                                   outputs=(OutputSpec(terms=(Term(0, "sin"),)),)),
        "eager vs twin materialize_grads: backward grad:x1: got None, expected a tensor"),
}


@pytest.mark.parametrize("fault", FORMS_FAULTS)
def test_a_forms_fault_is_seen_by_its_twin_only(fault: str) -> None:
    pair, spec, line = FORMS_FAULTS[fault]
    assert selfeval.get(fault).family == "forms"
    assert not check(spec, [EAGER], twins=pair).failed  # no fault: the twin agrees
    with selfeval.installed(fault):
        without = check(spec, [EAGER])
        found = check(spec, [EAGER], twins=pair)
    assert not without.failed, without.report()  # eager, the math oracle, lifetimes: blind to it
    assert found.failed, found.report()
    outcome = found.outcomes["eager"]
    assert outcome.reason.startswith(f"twin {pair} (F0 ")
    assert line in found.report(), found.report()
    assert f"vs twin {pair} at backward" in cause_of(outcome)
    assert twins_of_cause(cause_of(outcome)) == pair


def test_a_twin_difference_beside_the_paths_own_failure_keeps_both() -> None:
    """A path that fails on its own and against its twin reports both; its cause stays its own."""
    spec = with_(BASE, backward_method="vjp")
    with selfeval.installed("vjp_grads_last_bit"), selfeval.installed("wrong_backward"):
        verdict = check(spec, [EAGER], twins="backward_method")
    outcome = verdict.outcomes["eager"]
    assert outcome.status == "failed"
    assert {m.against for m in outcome.mismatches} >= {"math", "twin backward_method"}
    assert cause_of(outcome).startswith("mismatch vs math")


def test_a_campaign_counts_twins_per_pair(tmp_path) -> None:
    records: list[dict] = []
    result = run_campaign([EAGER], budget_s=60, max_examples=12, out_dir=tmp_path, twins=True,
                          on_record=records.append)
    assert result.twins_on and result.examples == 12
    counted = sum(c.examples for c in result.twins.values())
    assert counted == sum("twin" in r for r in records if r["kind"] == "example") > 0
    assert all(c.checked <= c.examples and c.failed == 0 for c in result.twins.values())
    again = CampaignResult.from_records(records)
    assert again.as_json()["twins"] == result.as_json()["twins"]
    assert CampaignResult.from_json(result.as_json()).twins.keys() == result.twins.keys()
    assert "twin-form oracle (docs/twins.md)" in result.summary()
    off = run_campaign([EAGER], budget_s=60, max_examples=2, out_dir=tmp_path / "off", twins=False)
    assert not off.twins and "twin-form oracle: off" in off.summary()


def test_a_reproducer_of_a_twin_failure_checks_that_twin(tmp_path) -> None:
    """A twin is the harness' own construction: the script runs the installed harness, forcing the
    pair, and says why; it exits 1 with the fault installed, 0 without."""
    pair, spec, _ = FORMS_FAULTS["vjp_grads_last_bit"]
    spec = with_(spec, code="plain")
    with selfeval.installed("vjp_grads_last_bit"):  # as in a campaign: the fault is there while it writes
        verdict = check(spec, [EAGER], twins=pair)
        assert verdict.failed
        path = write_reproducer(spec, ["eager"], "cpu", verdict.report(), tmp_path / "r.py", verdict=verdict,
                                twins=pair)
    text = path.read_text()
    assert f"twins={pair!r}" in text and "Why this script uses the harness: the comparison is against" in text
    run = functools.partial(subprocess.run, [sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    env = selfeval.subprocess_env("vjp_grads_last_bit")
    checkout = str(Path(harness.__file__).resolve().parents[1])  # the fault from this checkout's catalog
    env["PYTHONPATH"] = os.pathsep.join((env["PYTHONPATH"], checkout))
    with_fault = run(env=env)
    assert with_fault.returncode == 1, with_fault.stdout + with_fault.stderr
    assert f"twin {pair} (F0 vjp->backward) differs on eager" in with_fault.stdout
    assert run().returncode == 0


def test_check_on_the_command_line_takes_a_pair(tmp_path, capsys) -> None:
    from harness.cli import main

    spec_file = tmp_path / "spec.json"
    spec_file.write_text(ONE_OUTPUT.to_json())
    assert main(["check", str(spec_file), "--paths", "eager", "--twins", "tuple_output"]) == 0
    assert "twin tuple_output (F0 single->1-tuple): eager ok" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--twins 'bogus' is not a twin pair; use auto .* or one of style"):
        main(["check", str(spec_file), "--paths", "eager", "--twins", "bogus"])


@pytest.mark.parametrize("pair, spec, path", [("api", ONE_OUTPUT, "eager"), ("api", VMAPPED, "func.vmap"),
                                              ("vmap_rule", VMAPPED, "func.vmap"),
                                              ("vmap_rule", VMAPPED, "func.grad_vmap")])
def test_the_custom_op_and_user_vmap_twins_are_compared_and_agree(pair, spec, path):
    """The two forms harness/custom_op.py and build.with_user_vmap write: compared on the paths that
    run them, and equal there."""
    verdict = check(spec, paths.parse(path), lifetimes=False, twins=pair)
    assert not verdict.failed, verdict.report()
    assert verdict.twin is not None and verdict.twin.pair == pair
    assert verdict.twin.paths[path].status == "ok", verdict.twin.paths


@pytest.mark.parametrize("code", ["plain", "generic"])
def test_a_custom_op_twins_side_effects_are_recorded_as_its_functions(code):
    """A plain-style custom_op's kernel appends to the forward_calls list its own source defines
    (found as a false 'side_effects expected (), got (0,)' in a selfeval run)."""
    fn = FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "sin", 1.0),)),), style="setup_context",
                      save=("inputs",), untraceable="side_effect", code=code)
    spec = GraphSpec(shape=(3,), leaves=(LeafSpec(),), functions=(fn,), backward="backward")
    verdict = check(spec, [EAGER], lifetimes=False, twins="api")
    assert verdict.twin.paths["eager"].status == "ok", verdict.report()
    assert verdict.outcomes["eager"].result.values["meta:forward"]["side_effects"] == (0,)


@pytest.mark.parametrize("pair", twins.PAIR_NAMES)
def test_a_custom_op_keeps_the_forms_it_has_no_choice_of(pair):
    """A custom_op is setup_context with a backward method: the style and backward_method pairs
    leave it as it is, and every twin of it is a valid spec."""
    op = with_(ONE_OUTPUT, api="custom_op", style="setup_context")
    twin = twins.twin_of(op, pair)
    if pair in ("style", "backward_method", "vmap_rule"):
        assert twin is None
    else:
        assert twin is not None and twin.spec.functions[0].api in ("custom_op", "function")


def test_a_known_issue_of_the_twins_own_run_is_read_from_the_twins_side():
    """The 10-minute coverage campaign's twin failure (docs/func_repros): F0 returns a value made of
    none of its inputs; its vjp twin sends Dynamo to the fallback around it, where AOT materializes
    the unused gradient of x0's clone as zeros (aot-unused-gradient-materialized-as-zeros) and the
    traced original leaves x0's gradient None, as eager does. The twin's damage reads "expected None"
    only with the twin as the path and the original as the reference."""
    from harness.spec import load_spec

    spec = load_spec(str(Path(__file__).resolve().parent.parent / "docs/func_repros"
                         / "twin_vjp_fallback_aot_unused_gradient_zeros.json"))
    verdict = check(spec, [paths.get("dynamo")], twins="backward_method")
    assert verdict.twin.paths["dynamo"].status == "known", verdict.report()
    assert verdict.twin.paths["dynamo"].known == ("aot-unused-gradient-materialized-as-zeros",)
    assert not verdict.failed, verdict.report()


def test_materialize_grads_twins_may_differ_by_a_zero_gradient_for_none() -> None:
    """A campaign's cause (eager and owned): under double backward, F0's node meets an undefined
    gradient for the dirty output the first backward's graph did not use. With
    set_materialize_grads(False) its backward skips it and x2's gradient is None; with the default,
    torch hands it zeros and x2 gets a gradient of zeros, as documented: the twins agree. A nonzero
    gradient against None still differs (and at the first backward a zero one too: the
    materialize_off_zero_grads_dropped fault above)."""
    spec = GraphSpec.from_json((Path(__file__).resolve().parent.parent / "docs/func_repros"
                                / "twin_materialize_grads_double_backward_zero_8ab92ef7.json").read_text())
    twin = twins.twin_of(spec, "materialize_grads")
    eager = paths.get("eager")
    original, mirrored = (paths.run_path(eager, build(s)) for s in (spec, twin.spec))
    # what the pair documents, seen on the real runs: None on one side, zeros on the other
    assert original.tensors["double_backward"]["dgrad:x2"] is None
    assert not mirrored.tensors["double_backward"]["dgrad:x2"].any()
    assert twins.compare_twins(spec, twin, original, mirrored, EXACT) == []
    verdict = check(spec, [eager, paths.get("owned")], twins="materialize_grads")
    assert not verdict.failed and verdict.twin.paths["eager"].status == "ok", verdict.report()

    mirrored.tensors["double_backward"]["dgrad:x2"] = mirrored.tensors["double_backward"]["dgrad:x2"] + 1.0
    found = twins.compare_twins(spec, twin, original, mirrored, EXACT)
    assert [(m.checkpoint, m.role) for m in found] == [("double_backward", "dgrad:x2"),
                                                        ("meta:double_backward", "stride:dgrad:x2")], found
