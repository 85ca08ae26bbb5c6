"""A gradient 1.5 times too large fails in every dtype the generator draws, and what a comparison
cannot judge is counted, never passed in silence (harness/oracles/bounds.py, compare.py).

The fault is harness.selfeval's `every_grad_scaled`: torch's stock BackwardCFunction.apply returns
every gradient of a custom Function 1.5 times too large; the math oracle (plain autograd) and the
error bounds' float64 rerun (plain autograd too) are untouched by it."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import paths
from harness.build import build
from harness.check import check
from harness.oracles.bounds import OVERFLOW, UNCHECKED_SHARE, error_bounds
from harness.oracles.compare import Tolerance, Uncompared, compare
from harness.oracles.math import run_math
from harness.run import RunResult
from harness.spec import COMPLEX_DTYPES, DTYPES, Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

FAULT = "every_grad_scaled"


def _function(ref: str, op: str, coeff: float, bias: float = 0.0) -> FunctionSpec:
    return FunctionSpec(args=(Arg(ref),), outputs=(OutputSpec("compute", terms=(Term(0, op, coeff),), bias=bias),),
                        save=("inputs",))


def _chain(dtype: str, length: int, seed: int = 5) -> GraphSpec:
    """x0 -> c1 f1(x0) + b1 -> c2 f2(.) + b2 ...: one path from x0 to every output, so the fault
    scales each element of x0's gradient by 1.5 ** length. Complex graphs use the ops they allow
    (harness.spec.COMPLEX_OPS): square and linear; real ones tanh, then sin and square."""
    ops = [("square", 1.5, 0.5), ("linear", -0.5, 0.0)] if dtype in COMPLEX_DTYPES else \
        [("tanh", 1.5, 0.5), ("sin", -2.0, 0.0)]
    functions = tuple(_function("x0" if n == 0 else f"f{n - 1}.0", *ops[n % 2]) for n in range(length))
    return GraphSpec(shape=(5,), dtype=dtype, leaves=(LeafSpec(True),), functions=functions, backward="backward",
                     seed=seed)


@pytest.mark.parametrize("length", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_gradient_one_and_a_half_times_too_large_fails(dtype, length, fault):
    spec = _chain(dtype, length)
    clean = check(spec, [paths.get("eager")], lifetimes=False)
    assert clean.outcomes["eager"].status == "ok", clean.report()
    # every element of the gradient is judged at this precision: the bound cannot hide a 1.5x error
    bound = error_bounds(build(spec)).for_role("backward", "grad:x0")
    assert not bool(bound.wide.any()), bound
    fault(FAULT)
    verdict = check(spec, [paths.get("eager")], lifetimes=False)
    outcome = verdict.outcomes["eager"]
    assert outcome.status == "failed", verdict.report()
    assert [(m.role, m.detail.split(" (")[0]) for m in outcome.mismatches if m.role.startswith("grad")] == [
        ("grad:x0", "outside tolerance")]
    assert not outcome.uncompared, outcome.uncompared.describe()


@settings(max_examples=80)
@given(dtype=st.sampled_from(DTYPES), length=st.integers(1, 2), seed=st.integers(0, 2 ** 16),
       coeffs=st.lists(st.sampled_from([-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0]), min_size=2, max_size=2),
       ops=st.lists(st.sampled_from(["linear", "sin", "square", "tanh"]), min_size=2, max_size=2),
       bias=st.sampled_from([0.0, 0.5, -1.0, 3.0]))
def test_a_scaled_gradient_fails_or_is_reported_unchecked(dtype, length, seed, coeffs, ops, bias):
    """Generated one- and two-Function chains: with every gradient 1.5x, the example fails, or each
    element it does not catch is counted unchecked at this precision (its bound exceeds
    UNCHECKED_SHARE of the value: where a tanh saturates, or a gradient is close to zero)."""
    from harness import selfeval

    if dtype in COMPLEX_DTYPES:
        ops = [op if op in ("linear", "square") else "square" for op in ops]
    # (a bias of 3 saturates a tanh after it: its gradient is then too small to judge in half types)
    functions = tuple(_function("x0" if n == 0 else f"f{n - 1}.0", ops[n], coeffs[n], bias if n == 0 else 0.0)
                      for n in range(length))
    spec = GraphSpec(shape=(4,), dtype=dtype, leaves=(LeafSpec(True),), functions=functions, seed=seed)
    with selfeval.installed(FAULT):
        verdict = check(spec, [paths.get("eager")], lifetimes=False)
    built = build(spec)
    math = run_math(built)
    bound = error_bounds(built).for_role("backward", "grad:x0")
    eager = verdict.outcomes["eager"].result.tensors["backward"]["grad:x0"]
    expected = math.tensors["backward"]["grad:x0"]
    differ = eager != expected
    judged = differ & ~bound.wide & torch.isfinite(bound.atol)
    outcome = verdict.outcomes["eager"]
    if bool(judged.any()):  # a differing element judged at this precision: a 1.5x error is caught
        assert outcome.status == "failed", verdict.report()
    elif outcome.status != "failed":  # none: each differing element is counted, none passes silently
        counted = sum(outcome.uncompared.unchecked.values()) + sum(outcome.uncompared.overflowed.values())
        assert counted == int(differ.sum()), verdict.report()


# --- what is not judged is counted ----------------------------------------------------------------


#: a generated bfloat16 structure (scripts/dtype_sensitivity.py found it), shrunk by hand: x0's
#: gradient sums seven contributions through one and two Functions; with every gradient 1.5x it
#: moves by 6.5%, within its bound (24% of the value: the rounding of the summands in bfloat16)
UNCHECKED_SPEC = GraphSpec(
    shape=(), dtype="bfloat16", leaves=(LeafSpec(True),),
    functions=(
        FunctionSpec(args=tuple(Arg("x0") for _ in range(5)),
                     outputs=(OutputSpec("view", slot=0), OutputSpec("view", slot=1),
                              OutputSpec("compute", terms=(Term(2, "tanh", -1.5), Term(3, "tanh", 1.0),
                                                           Term(4, "sin", 0.5), Term(0, "sin", 0.5))),
                              OutputSpec("view", slot=4)),
                     save=("inputs",)),
        FunctionSpec(args=(Arg("f0.1", clone=True, view=True),), outputs=(OutputSpec("dirty", slot=0),),
                     save=("inputs",))),
    backward="grad", seed=1)


def test_an_element_within_a_wide_bound_is_counted_unchecked(fault):
    clean = check(UNCHECKED_SPEC, [paths.get("eager")], lifetimes=False)
    assert clean.outcomes["eager"].status == "ok", clean.report()
    fault(FAULT)
    verdict = check(UNCHECKED_SPEC, [paths.get("eager")], lifetimes=False)
    outcome = verdict.outcomes["eager"]
    assert outcome.status == "ok", verdict.report()  # the fault moved it less than rounding could
    assert outcome.uncompared.unchecked == {"backward agrad:x0": 1}, outcome.uncompared
    assert "1 element unchecked at this precision (backward agrad:x0 1)" in verdict.report()
    from harness.records import outcome_record
    assert outcome_record(outcome)["unchecked"] == {"backward agrad:x0": 1}


def test_the_campaign_counts_unchecked_and_overflowed_elements():
    from harness.results import PathCounts

    counts = PathCounts()
    counts.add({"status": "ok", "unchecked": {"backward grad:x0": 2, "backward grad:x1": 1}})
    counts.add({"status": "failed", "overflowed": {"forward out:f0.0": 4}})
    counts.add({"status": "ok"})
    summary = counts.as_json()
    assert (summary["unchecked_elements"], summary["overflowed_elements"], summary["uncompared_examples"]) == (3, 4, 2)
    assert PathCounts.from_json(summary).as_json() == summary
    old = {k: v for k, v in summary.items() if k not in ("unchecked_elements", "overflowed_elements",
                                                         "uncompared_examples")}
    assert PathCounts.from_json(old).unchecked == 0  # a campaign log from before still loads
    assert "3 elements unchecked at this precision" in counts.uncompared_line()
    assert "4 that may overflow" in counts.uncompared_line()


#: float16 squares of squares: f3 passes float16's largest value (65504) on some elements, and the
#: gradient's products on more
OVERFLOW_SPEC = GraphSpec(
    shape=(6,), dtype="float16", leaves=(LeafSpec(True),),
    functions=tuple(_function("x0" if n == 0 else f"f{n - 1}.0", "square", 2.0, bias)
                    for n, bias in enumerate((0.0, 3.0, 0.0, 0.0))),
    backward="backward", seed=3)


def test_elements_that_may_overflow_are_counted_not_compared(fault):
    built = build(OVERFLOW_SPEC)
    bounds = error_bounds(built)
    out = bounds.for_role("forward", "out:f3.0")
    overflowing = ~torch.isfinite(out.atol)
    assert bool(overflowing.any()) and not bool(overflowing.all()), out.atol
    assert bool((out.atol[overflowing] == OVERFLOW).all())
    math = run_math(built)
    # the values that may overflow differ on the other side: not compared, counted
    tensors = {c: dict(r) for c, r in math.tensors.items()}
    tensors["forward"]["out:f3.0"] = torch.where(overflowing, torch.tensor(1.0, dtype=torch.float16),
                                                 tensors["forward"]["out:f3.0"])
    other = dataclasses.replace(math, path="other", tensors=tensors)
    uncompared = Uncompared()
    assert compare(math, other, bounds, uncompared=uncompared) == []
    assert uncompared.overflowed == {"forward out:f3.0": int(overflowing.sum())}
    # and a finite element beside them that differs is still reported
    tensors["forward"]["out:f3.0"] = torch.where(overflowing, tensors["forward"]["out:f3.0"],
                                                 tensors["forward"]["out:f3.0"] * 0.5)
    found = compare(math, dataclasses.replace(math, path="other", tensors=tensors), bounds)
    assert [(m.role, m.detail.split(" (")[0]) for m in found] == [("out:f3.0", "outside tolerance")]


# --- different dtypes: reported, and compared after promotion --------------------------------------


def _one(role_value: torch.Tensor) -> RunResult:
    return RunResult("path", tensors={"backward": {"grad:x0": role_value}})


def test_a_dtype_difference_is_reported_and_the_values_still_compared():
    expected = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float32)
    tol = Tolerance(exact=False, atol=torch.full((3,), 1e-3, dtype=torch.float64))
    same_values = compare(_one(expected), _one(expected.double()), tol)
    assert [m.detail for m in same_values] == ["dtype torch.float64, expected torch.float32"]
    wrong_values = compare(_one(expected), _one(expected.double() * 1.5), tol)
    assert [m.detail.split(" (")[0] for m in wrong_values] == [
        "dtype torch.float64, expected torch.float32", "outside tolerance"]
    exact = compare(_one(expected), _one(expected.double() + 1e-9), Tolerance())
    assert [m.detail for m in exact] == ["dtype torch.float64, expected torch.float32", "not bit-identical"]


class _Float64Gradients:
    """A path that runs eager and hands its gradients back in float64, scaled: check() must report
    the dtype and the values."""

    name = "eager:float64"
    exact_vs_eager = False

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def available(self) -> str | None:
        return None

    def unsupported(self, spec: GraphSpec) -> str | None:
        return None

    def run(self, built):
        result = paths.get("eager").run(built)
        tensors = {c: dict(r) for c, r in result.tensors.items()}
        tensors["backward"] = {r: None if t is None else t.double() * self.scale
                               for r, t in tensors["backward"].items()}
        return dataclasses.replace(result, path=self.name, tensors=tensors)


@pytest.mark.parametrize("scale, details", [
    (1.0, {"dtype torch.float64, expected torch.float32"}),
    (1.5, {"dtype torch.float64, expected torch.float32", "outside tolerance"})])
def test_check_compares_gradients_of_another_dtype(scale, details):
    spec = _chain("float32", 2)
    verdict = check(spec, [paths.get("eager"), _Float64Gradients(scale)], lifetimes=False)
    outcome = verdict.outcomes["eager:float64"]
    assert outcome.status == "failed"
    found = {(m.against, m.detail.split(" (")[0]) for m in outcome.mismatches if m.role == "grad:x0"}
    assert found == {(against, d) for against in ("math", "eager") for d in details}, verdict.report()
