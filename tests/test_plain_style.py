"""The `plain` code style (harness/plain.py): what its source may read, and the
differential check that both styles of one spec give bit-identical results on eager."""

import dataclasses
import subprocess
import sys
import dis
import json

import pytest
from hypothesis import given

from harness import build, generic, paths, plain
from harness.check import check
from harness.oracles.compare import EXACT, compare
from harness.oracles.math import completed
from harness.spec import Arg, ConstTuple, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, SpecError, Term
from strategies import graphs

METHODS = ("forward", "setup_context", "backward", "vjp", "jvp")

# Hand-made specs for what the generated space reaches only now and then.
HAND_MADE = {
    "every output kind, old style": GraphSpec(
        shape=(2, 3), leaves=(LeafSpec(), LeafSpec(layout="transposed")),
        functions=(FunctionSpec(
            args=(Arg("x0"), Arg(const=ConstTuple((1, None))), Arg("x1", clone=True), Arg("x1")),
            outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(3, "square", -0.5),
                                                  Term(0, "tanh", 2.0), Term(3))),
                     OutputSpec("dirty", slot=2, coeff=-2.0), OutputSpec("view", slot=3),
                     OutputSpec("input", slot=0), OutputSpec("const", value="tag"),
                     OutputSpec("compute", terms=(Term(0, "linear", 0.5),), non_differentiable=True)),
            save=("inputs", "intermediates", "outputs"), jvp=True, ctx_state=True),),
        backward="retain", forward_ad=True),
    "gradients decided at run time": GraphSpec(
        shape=(3,), leaves=(LeafSpec(), LeafSpec(requires_grad=False)),
        functions=(
            FunctionSpec(args=(Arg("x0"), Arg("x1")),
                         outputs=(OutputSpec("compute", terms=(Term(0, "square", 2.0),), non_differentiable=True),
                                  OutputSpec("compute", terms=(Term(1, "sin"), Term(0, "tanh", -1.0))),
                                  OutputSpec("view", slot=0)),
                         style="setup_context", save=("intermediates",), materialize_grads=False,
                         needs_input_grad="saved", unused_grad="zeros", vmap=True, once_differentiable=True,
                         backward_method="vjp"),
            FunctionSpec(args=(Arg("f0.1"), Arg("x0")), outputs=(OutputSpec("compute", terms=(Term(1),)),),
                         tuple_output=False, materialize_grads=False, needs_input_grad="read")),
        backward="grad"),
    "double backward with non-finite constants": GraphSpec(
        shape=(2,), leaves=(LeafSpec(),),
        functions=(FunctionSpec(args=(Arg("x0"), Arg(const=None)),
                                outputs=(OutputSpec("compute", terms=(Term(0, "tanh", 2.0),), bias=float("inf")),
                                         OutputSpec("const", value=float("nan"))),
                                save=("inputs",), jvp=True),),
        backward="double", forward_ad=True),
    "partial backward past a Function that does not reach the chosen leaf": GraphSpec(
        shape=(3,), leaves=(LeafSpec(), LeafSpec(), LeafSpec()),
        functions=(
            FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec("compute", terms=(Term(0, "sin"),)),),
                         save=("intermediates",), needs_input_grad="read"),
            FunctionSpec(args=(Arg("f0.0"), Arg("x1"), Arg("x2")),
                         outputs=(OutputSpec("compute", terms=(Term(0, "tanh"), Term(1, "square"), Term(2))),),
                         save=("intermediates",), needs_input_grad="read", backward_method="vjp")),
        backward="backward", grad_leaves=(1,)),
    "outputs modified in place after the forward, one of them saved": GraphSpec(
        shape=(2, 2), leaves=(LeafSpec(), LeafSpec()),
        functions=(
            FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec("compute", terms=(Term(0, "sin"),)),
                                                     OutputSpec("compute", terms=(Term(0),), non_differentiable=True)),
                         save=("inputs",)),
            FunctionSpec(args=(Arg("f0.0"), Arg("x1")),
                         outputs=(OutputSpec("compute", terms=(Term(0, "tanh"), Term(1))),), save=("inputs",))),
        backward="retain", mutated_outputs=("f0.0", "f1.0")),
    "forward code Dynamo cannot trace": GraphSpec(
        shape=(3,), leaves=(LeafSpec(),),
        functions=(
            FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec("compute", terms=(Term(0, "sin"),)),),
                         save=("inputs",), untraceable="data_branch", jvp=True),
            FunctionSpec(args=(Arg("f0.0"),), outputs=(OutputSpec("compute", terms=(Term(0, "tanh"),)),),
                         style="setup_context", save=("intermediates",), untraceable="print", jvp=True),
            FunctionSpec(args=(Arg("f1.0"), Arg("x0")), outputs=(OutputSpec("compute", terms=(Term(0), Term(1))),),
                         untraceable="side_effect", jvp=True)),
        forward_ad=True),
    "a Function applied inside another's forward": GraphSpec(
        shape=(2, 3), leaves=(LeafSpec(), LeafSpec(layout="strided")),
        functions=(
            FunctionSpec(args=(Arg("x0"), Arg(const=2), Arg("x1", clone=True), Arg("x1")),
                         outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(3, "square"))),
                                  OutputSpec("dirty", slot=2, coeff=0.5), OutputSpec("view", slot=3),
                                  OutputSpec("compute", terms=(Term(3, "tanh"),), non_differentiable=True)),
                         save=("inputs",), jvp=True, nested=True),
            FunctionSpec(args=(Arg("f0.0"),), outputs=(OutputSpec("compute", terms=(Term(0, "tanh", -1.0),)),),
                         style="setup_context", save=("inputs",), jvp=True, vmap=True, nested=True,
                         tuple_output=False)),
        backward="double", forward_ad=True),
    "mark_dirty on a view input": GraphSpec(
        shape=(2, 3), leaves=(LeafSpec(layout="transposed"),),
        functions=(
            FunctionSpec(args=(Arg("x0", clone=True, view=True), Arg("x0")),
                         outputs=(OutputSpec("dirty", slot=0, coeff=-1.5),), jvp=True, needs_input_grad="read",
                         unused_grad="zeros"),
            FunctionSpec(args=(Arg("f0.0", clone=True, view=True),), outputs=(OutputSpec("dirty", slot=0, coeff=2.0),),
                         style="setup_context", tuple_output=False, jvp=True, once_differentiable=True)),
        backward="retain", forward_ad=True),
    "arguments passed to apply by keyword": GraphSpec(
        shape=(2, 3), leaves=(LeafSpec(), LeafSpec(layout="transposed")),
        functions=(
            FunctionSpec(args=(Arg("x0"), Arg(const=2), Arg("x1", clone=True), Arg("x1")),
                         outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(3, "square"))),
                                  OutputSpec("dirty", slot=2, coeff=0.5), OutputSpec("view", slot=3)),
                         style="setup_context", save=("inputs",), jvp=True, keyword_args=3),
            FunctionSpec(args=(Arg("f0.0"), Arg("x0")),
                         outputs=(OutputSpec("compute", terms=(Term(0, "tanh"), Term(1))),),
                         save=("inputs",), jvp=True, keyword_args=2),  # old style, every argument by keyword
            FunctionSpec(args=(Arg("f1.0"), Arg(const=None), Arg("x1")),
                         outputs=(OutputSpec("compute", terms=(Term(0, "sin", -1.0), Term(2))),),
                         style="setup_context", save=("inputs",), jvp=True, vmap=True, nested=True, tuple_output=False,
                         keyword_args=1)),
        backward="double", forward_ad=True),
    **{f"error {error}": GraphSpec(
        shape=(2,), leaves=(LeafSpec(),),
        functions=(FunctionSpec(args=(Arg("x0"), Arg(const=3)), outputs=(OutputSpec("compute", terms=(Term(0),)),),
                                error=error),))
       for error in ("grad_count", "grad_shape", "grad_for_nontensor")},
}


def _global_names(fn) -> set[str]:
    code = fn.__code__
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:  # nested code (comprehensions)
        if hasattr(const, "co_code"):
            names |= {i.argval for i in dis.get_instructions(const) if i.opname == "LOAD_GLOBAL"}
    return names


@pytest.mark.parametrize("name", sorted(HAND_MADE))
def test_plain_methods_read_nothing_but_torch(name):
    spec = plain.in_code_style(HAND_MADE[name], "plain")
    for cls in build.build(spec).functions:
        # a side effect at module level and an inner Function are the names a plain source
        # defines for itself
        own = ({"forward_calls"} if cls.spec.untraceable == "side_effect" else set()) | (
            {f"F{cls.index}Inner"} if cls.spec.nested else set())
        assert set(vars(cls)["forward"].__func__.__globals__) == {"torch", "__builtins__"} | own
        for method in METHODS:
            fn = vars(cls).get(method)
            if fn is None:
                continue
            fn = getattr(fn.__func__, "__wrapped__", fn.__func__)  # under once_differentiable
            assert fn.__code__.co_freevars == (), (method, fn.__code__.co_freevars)  # no closure
            builtins = {"tuple", "AssertionError", "print"}
            assert _global_names(fn) <= {"torch"} | builtins | own, (method, _global_names(fn))
            assert "cls" not in fn.__code__.co_varnames and f"F{cls.index}" not in _global_names(fn)


def test_the_source_is_what_runs_and_reads_like_user_code():
    spec = plain.in_code_style(HAND_MADE["every output kind, old style"], "plain")
    cls = build.build(spec).functions[0]
    source = cls.source
    assert source.startswith("class F0(torch.autograd.Function):")
    assert "def forward(ctx, a0, a1, a2, a3):" in source and "def backward(ctx, g0, g1, g2, g3, g4, g5):" in source
    assert "torch.full((2, 3), 0.0, dtype=torch.float64, device='cpu')" in source
    assert "o1 = a2.mul_(-2.0)" in source and "ctx.mark_dirty(a2)" in source
    assert "ctx.term_coeffs = ((1.5, -0.5, 2.0, 1.0), (), (), (), (), (0.5,))" in source
    import linecache
    assert linecache.getline(cls.forward.__code__.co_filename, 1).startswith("class F0(")


def test_keyword_arguments_are_written_as_users_pass_them():
    """The forward names its parameters in both styles, and the straight-line forward passes the
    last `keyword_args` by those names, last to first."""
    spec = HAND_MADE["arguments passed to apply by keyword"]
    text = plain.graph_forward_source(spec).text
    assert "f0_0, f0_1, f0_2 = F0.apply(x0, a3=x1, a2=c0_2, a1=2)" in text
    assert "(f1_0,) = F1.apply(a1=x0, a0=f0_0)" in text
    assert "f2_0 = F2.apply(f1_0, None, a2=x1)" in text
    import inspect
    for code in ("generic", "plain"):
        f0, f1, _ = build.build(plain.in_code_style(spec, code)).functions
        assert list(inspect.signature(f0.forward).parameters) == ["a0", "a1", "a2", "a3"], code
        assert list(inspect.signature(f1.forward).parameters) == ["ctx", "a0", "a1"], code


@pytest.mark.parametrize("name", sorted(HAND_MADE))
def test_hand_made_specs_are_bit_identical_in_both_styles(name):
    _assert_styles_agree(HAND_MADE[name])


@given(spec=graphs())
def test_both_styles_are_bit_identical_on_eager(spec):
    _assert_styles_agree(spec)


def _assert_styles_agree(spec: GraphSpec) -> None:
    eager = paths.get("eager")
    generic_run = eager.run(build.build(plain.in_code_style(spec, "generic")))
    written = eager.run(build.build(plain.in_code_style(spec, "plain")))
    assert (generic_run.status, generic_run.error_checkpoint) == (written.status, written.error_checkpoint), \
        (generic_run.describe_error(), written.describe_error())
    if generic_run.status == "error":
        assert (type(generic_run.error), str(generic_run.error)) == (type(written.error), str(written.error))
    assert compare(completed(generic_run), completed(written), EXACT) == []


def test_the_differential_check_sees_a_one_ulp_difference(monkeypatch):
    """The control for the tests above: a plain source that computes anything else is caught."""
    spec = HAND_MADE["every output kind, old style"]
    function_source = plain.function_source
    monkeypatch.setattr(plain, "function_source", lambda *a, **k: function_source(*a, **k).replace(
        "o0 = o0 + 1.5 * torch.sin(a0)", "o0 = o0 + 1.5 * torch.sin(a0) * (1 + 2 ** -40)"))
    with pytest.raises(AssertionError, match="not bit-identical"):
        _assert_styles_agree(spec)


@pytest.mark.parametrize("name", sorted(HAND_MADE))
def test_plain_functions_agree_on_every_path_here(name):
    chosen = [paths.get("eager")] + [p for p in (paths.get("owned"), paths.get("borrowed")) if p.available() is None]
    verdict = check(plain.in_code_style(HAND_MADE[name], "plain"), chosen)
    assert not verdict.failed, verdict.report()


@pytest.mark.parametrize("name, report", [
    ("wrong_backward", "eager vs math: backward grad:x0: outside tolerance"),
    ("wrong_jvp", "eager vs math: forward_ad tangent:f0.0: outside tolerance"),
])
def test_value_faults_are_written_into_plain_source(name, report, fault):
    fault(name)
    spec = plain.in_code_style(HAND_MADE["every output kind, old style"], "plain")
    assert f"# self-test fault {name}" in build.build(spec).functions[0].source
    assert report in check(spec, [paths.get("eager")]).report()


# --- the spec axis -------------------------------------------------------------------------


def test_code_is_validated_and_round_trips():
    spec = plain.in_code_style(HAND_MADE["gradients decided at run time"], "plain")
    assert GraphSpec.from_json(spec.to_json()) == spec
    with pytest.raises(SpecError, match=r"functions\[0\]\.code='fancy' is invalid: choose one of \('generic', 'plain'\)"):
        dataclasses.replace(spec, functions=(dataclasses.replace(spec.functions[0], code="fancy"),))


def test_a_spec_without_the_field_is_generic():
    data = json.loads(HAND_MADE["error grad_count"].to_json())
    del data["functions"][0]["code"]
    assert GraphSpec.from_json(json.dumps(data)).functions[0].code == "generic"


def test_a_tuple_output_constant_needs_the_generic_style():
    fn = FunctionSpec(outputs=(OutputSpec("const", value=ConstTuple((1, 2))),), code="plain")
    with pytest.raises(SpecError, match=r"functions\[0\]\.outputs\[0\]\.value=ConstTuple\(\(1, 2\)\) is invalid"):
        GraphSpec(leaves=(LeafSpec(),), functions=(fn,))


# --- reproducers -------------------------------------------------------------------------


def test_a_plain_reproducer_shows_and_runs_its_functions(fault, tmp_path):
    from harness.repro import write_reproducer

    fault("wrong_backward")
    spec = HAND_MADE["every output kind, old style"]
    verdict = check(spec, [paths.get("eager")])
    assert verdict.failed
    script = write_reproducer(spec, ["eager"], "cpu", verdict.report(), tmp_path / "repro.py", verdict=verdict)
    text = script.read_text()
    assert "\nclass F0(torch.autograd.Function):\n" in text and "from harness" not in text
    fault_line = "gx0 = gx0 * 1.5  # self-test fault wrong_backward"
    assert fault_line in text
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILS: eager differs from math at backward" in done.stderr
    # the classes shown are the ones that run: without the faulty line the failure is gone
    script.write_text(text.replace(fault_line, "pass"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_failure_the_plain_style_does_not_share_runs_the_harness(fault, tmp_path):
    from harness.repro import write_reproducer

    fault("leak_input")  # needs module state: generic Functions only
    spec = HAND_MADE["every output kind, old style"]
    verdict = check(spec, [paths.get("eager")])
    assert verdict.failed
    text = write_reproducer(spec, ["eager"], "cpu", verdict.report(), tmp_path / "r.py", verdict=verdict).read_text()
    assert "Why this script uses the harness:" in text and "class F0(" not in text


@pytest.mark.parametrize("code", ["generic", "plain"])
def test_a_vjp_function_defines_vjp_only_and_torch_runs_it(code):
    spec = plain.in_code_style(HAND_MADE["gradients decided at run time"], code)
    cls = build.build(spec).functions[0]
    assert "vjp" in vars(cls) and "backward" not in vars(cls)
    if code == "plain":
        assert "def vjp(ctx, g0, g1, g2):" in cls.source
    verdict = check(spec, [paths.get("eager")])
    assert not verdict.failed and verdict.outcomes["eager"].status == "ok", verdict.report()


def test_a_partial_backward_judges_saved_tensors_only_of_the_nodes_it_runs():
    """F0 does not lead to the chosen leaf x1: torch's engine never runs its backward, so its
    saved intermediate rightly outlives the backward; the lifetime rule must not call that a
    leak, and still judges F1."""
    from harness.oracles.lifetimes import rule_violations
    from harness.oracles.lifetimes import tracking_lifetimes

    spec = HAND_MADE["partial backward past a Function that does not reach the chosen leaf"]
    with tracking_lifetimes():
        result = paths.get("eager").run(build.build(spec))
    assert result.status == "ok" and result.tensors["backward"]["grad:x0"] is None
    assert result.values["life:nodes"] == {"requires_grad": (0, 1), "backward_runs": (1,)}
    assert result.values["life:backward"]["saved:f0.0"][0]  # alive: F0's backward never ran
    assert rule_violations(result, spec.backward) == []
    del result.values["life:nodes"]["backward_runs"]  # the control: judged as if every node ran
    assert [v.role for v in rule_violations(result, spec.backward)] == ["saved:f0.0"]


def test_an_in_place_update_of_a_saved_output_raises_torchs_version_error_as_expected():
    """F1 saved its input f0.0, which the user then scales in place: every path must raise
    torch's version-counter error at backward, and the check counts that as expected."""
    from harness.dataflow import VERSION_ERROR, version_error_expected

    spec = HAND_MADE["outputs modified in place after the forward, one of them saved"]
    assert version_error_expected(spec)
    result = paths.get("eager").run(build.build(spec))
    assert result.error_checkpoint == "backward" and VERSION_ERROR.search(str(result.error))
    unsaved = dataclasses.replace(spec, mutated_outputs=("f1.0",))  # nobody saved f1.0
    assert not version_error_expected(unsaved)
    assert paths.get("eager").run(build.build(unsaved)).status == "ok"
    assert check(unsaved, [paths.get("eager")]).outcomes["eager"].status == "ok"


class _SkipsTheInPlaceUpdate:
    """A fake path beside the real ones: eager, but the user's in-place update never
    happens, as if a path lost the version check."""

    name = "eager:skips-update"  # in eager's family: its metadata rules apply
    exact_vs_eager = False

    def available(self):
        return None

    def unsupported(self, spec):
        return None

    def run(self, built):
        result = paths.get("eager").run(build.build(dataclasses.replace(built.spec, mutated_outputs=())))
        result.path = self.name
        return result


def test_a_path_that_misses_the_version_error_fails():
    spec = HAND_MADE["outputs modified in place after the forward, one of them saved"]
    verdict = check(spec, [paths.get("eager"), _SkipsTheInPlaceUpdate()])
    assert verdict.outcomes["eager"].status == "ok"
    assert verdict.outcomes["eager:skips-update"].status == "failed"
    assert "ran without torch's version-counter error" in verdict.report()


def test_untraceable_forward_code_runs_in_both_styles():
    spec = HAND_MADE["forward code Dynamo cannot trace"]
    for code in ("generic", "plain"):
        built = build.build(plain.in_code_style(spec, code))
        assert paths.get("eager").run(built).status == "ok"
        sources = [getattr(cls, "source", "") for cls in built.functions]
        if code == "plain":
            assert "if a0.sum() > 0:" in sources[0] and 'print(end="")' in sources[1]
            assert sources[2].startswith("forward_calls = []") and "forward_calls.append(2)" in sources[2]
            calls = vars(built.functions[2])["forward"].__func__.__globals__["forward_calls"]
        else:
            calls = generic.FORWARD_CALLS
        assert calls == [2, 2]  # the backward run's forward, then forward AD's


def test_a_nested_function_applies_its_inner_function_in_both_styles():
    spec = HAND_MADE["a Function applied inside another's forward"]
    for code in ("generic", "plain"):
        built = build.build(plain.in_code_style(spec, code))
        inner_classes = [vars(cls)["forward"].__func__.__globals__[f"F{cls.index}Inner"] if code == "plain"
                         else cls.inner for cls in built.functions]
        assert [c.__name__ for c in inner_classes] == ["F0Inner", "F1Inner"]
        if code == "plain":
            assert "o0, o3 = F0Inner.apply(a0, a1, a2, a3)" in built.functions[0].source
        assert paths.get("eager").run(built).status == "ok"


@pytest.mark.parametrize("code", ["generic", "plain"])
def test_a_checkpointed_forward_runs_the_functions_again_at_backward(code):
    spec = GraphSpec(shape=(3,), leaves=(LeafSpec(),), checkpoint=True, functions=(FunctionSpec(
        args=(Arg("x0"),), outputs=(OutputSpec("compute", terms=(Term(0, "sin"),)),), save=("inputs",),
        untraceable="side_effect", code=code),))
    built = build.build(spec)
    assert paths.get("eager").run(built).status == "ok"
    calls = (vars(built.functions[0])["forward"].__func__.__globals__["forward_calls"] if code == "plain"
             else generic.FORWARD_CALLS)
    assert calls == [0, 0]  # the forward, then checkpoint's recomputation at backward
    assert not check(spec, [paths.get("eager")]).failed
