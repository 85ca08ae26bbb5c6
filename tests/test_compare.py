"""compare() checks every role of a checkpoint in one elementwise pass (harness/oracles/compare.py,
_all_within) and decides role by role only where that pass finds a difference: its mismatches must
be exactly those of deciding every role on its own (_tensor_difference), whatever the values."""

from __future__ import annotations

import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from harness.oracles.compare import (
    EXACT,
    Tolerance,
    _structural_difference,
    _tensor_difference,
    compare,
)
from harness.run import RunResult

#: what an element of the actual side may be, relative to the expected one
CHANGES = ("same", "within", "beyond", "inf", "nan", "expected inf", "expected nan", "both inf", "both nan",
           "inf against -inf", "nan against inf")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.complex64)


@st.composite
def _roles(draw: st.DrawFn) -> tuple[dict[str, torch.Tensor | None], dict[str, torch.Tensor | None],
                                     dict[str, Tolerance]]:
    """Expected and actual tensors of a few roles, with a per-element bound each, where some
    elements differ within their bound, beyond it, or are not finite (on one side or both), and
    some bounds are infinite (bounds.OVERFLOW: not compared)."""
    dtype = draw(st.sampled_from(DTYPES))
    # one kind of tolerance for every role (one pass), or a mix (decided role by role)
    kinds = draw(st.sampled_from([("bound",), ("exact",), ("scalar",), ("bound", "exact", "scalar")]))
    expected: dict[str, torch.Tensor | None] = {}
    actual: dict[str, torch.Tensor | None] = {}
    tolerances: dict[str, Tolerance] = {}
    for r in range(draw(st.integers(1, 5))):
        role = f"grad:x{r}"
        if draw(st.integers(0, 9)) == 0:  # a None gradient against zeros
            expected[role], actual[role] = None, torch.zeros(3, dtype=dtype)
            tolerances[role] = Tolerance(exact=False, atol=0.0)
            continue
        n = draw(st.integers(0, 4))
        e = torch.linspace(-1, 1, n, dtype=torch.float64).to(dtype) if n else torch.zeros(0, dtype=dtype)
        a = e.clone()
        bound = torch.full((n,), 1e-2, dtype=torch.float64)
        for i in range(n):
            change = draw(st.sampled_from(("same",) * 8 + CHANGES))  # mostly one change in a checkpoint
            if change == "within":
                a[i] = e[i] + 5e-3
            elif change == "beyond":
                a[i] = e[i] + 0.5
            elif change == "inf":
                a[i] = math.inf
            elif change == "nan":
                a[i] = math.nan
            elif change in ("expected inf", "expected nan"):
                e[i] = math.inf if change == "expected inf" else math.nan
            elif change in ("both inf", "both nan"):
                e[i] = a[i] = math.inf if change == "both inf" else math.nan
            elif change == "inf against -inf":
                e[i], a[i] = -math.inf, math.inf
            elif change == "nan against inf":
                e[i], a[i] = math.inf, math.nan
            if draw(st.integers(0, 5)) == 0:
                bound[i] = math.inf
        expected[role], actual[role] = e, a
        kind = draw(st.sampled_from(kinds))
        tolerances[role] = {"bound": Tolerance(exact=False, atol=bound), "exact": EXACT,
                            "scalar": Tolerance(exact=False, atol=1e-2)}[kind]
    return expected, actual, tolerances


class _ByRole:
    """Tolerances per role, as harness.oracles.bounds.error_bounds gives them."""

    def __init__(self, tolerances: dict[str, Tolerance]) -> None:
        self.tolerances = tolerances

    def for_role(self, checkpoint: str, role: str) -> Tolerance:
        return self.tolerances[role]


def _role_by_role(expected: dict, actual: dict, tolerances: dict[str, Tolerance]) -> list[tuple]:
    """What compare must report: each role decided on its own."""
    out = []
    for role in sorted(expected):
        detail = _structural_difference(expected[role], actual[role], True)
        if detail is None and expected[role] is not None:
            detail = _tensor_difference(expected[role], actual[role], tolerances[role])
        if detail is not None:
            out.append((role, detail[0]))
    return out


@given(_roles())
def test_one_pass_reports_what_role_by_role_does(roles):
    expected, actual, tolerances = roles
    found = compare(RunResult("math", tensors={"backward": expected}), RunResult("eager", tensors={"backward": actual}),
                    _ByRole(tolerances), none_is_zero=True)
    assert [(m.role, m.detail) for m in found] == _role_by_role(expected, actual, tolerances)


def test_a_wrong_element_among_many_roles_is_reported_alone():
    """The one-pass check finds the difference; the report names its role only."""
    e = {f"grad:x{i}": torch.linspace(-1, 1, 5) for i in range(6)}
    a = {role: t.clone() for role, t in e.items()}
    a["grad:x4"][2] += 1.0
    bound = Tolerance(exact=False, atol=torch.full((5,), 1e-3, dtype=torch.float64))
    found = compare(RunResult("math", tensors={"forward": e}), RunResult("eager", tensors={"forward": a}),
                    _ByRole(dict.fromkeys(e, bound)))
    assert [(m.checkpoint, m.role) for m in found] == [("forward", "grad:x4")]
    assert "outside tolerance" in found[0].detail


def test_values_differing_only_in_type_are_reported():
    """The values' fast path (dict equality) must not take 1 for 1.0 or True."""
    found = compare(RunResult("math", values={"forward": {"version:f0.0": 1, "alias:f0.0": "fresh"}}),
                    RunResult("eager", values={"forward": {"version:f0.0": 1.0, "alias:f0.0": "fresh"}}), EXACT)
    assert [m.role for m in found] == ["version:f0.0"]


def test_the_error_bounds_are_computed_only_where_a_pair_is_not_bit_identical():
    """check() gives compare() Tolerances that compute the bounds (the float64 twin rerun) at their
    first use: two bit-identical sides never ask for them, two that differ do, and are judged."""
    from harness.oracles.compare import Tolerances

    computed = []

    def bounds() -> dict:
        computed.append(True)
        return {("backward", "grad:x0"): torch.full((3,), 1e-2, dtype=torch.float64)}

    def against(actual: torch.Tensor, tol: Tolerances) -> list:
        return compare(RunResult("math", tensors={"backward": {"grad:x0": expected}}),
                       RunResult("eager", tensors={"backward": {"grad:x0": actual}}), tol)

    expected = torch.tensor([1.0, math.nan, 3.0])
    assert against(expected.clone(), Tolerances(bounds)) == [] and computed == []  # nan where nan
    assert against(expected + torch.tensor([5e-3, 0.0, 0.0]), Tolerances(bounds)) == [] and computed == [True]
    beyond = against(expected + torch.tensor([0.5, 0.0, 0.0]), Tolerances(bounds))
    assert [m.detail.startswith("outside tolerance") for m in beyond] == [True] and len(computed) == 2


SPECIAL = (0.5, math.inf, -math.inf, math.nan)


@given(st.lists(st.tuples(st.sampled_from(SPECIAL), st.sampled_from(SPECIAL)), min_size=1, max_size=4),
       st.sampled_from(["exact", "bound"]))
def test_non_finite_values_agree_where_assert_close_says_they_do(pairs, kind):
    """Two non-finite values are not all equal (-inf against +inf, nan against inf): the verdict
    on every pair of values is torch.testing.assert_close's (equal_nan=True):
    an inf equals only the inf of its sign, a nan only a nan."""
    e = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    a = torch.tensor([p[1] for p in pairs], dtype=torch.float64)
    tol = EXACT if kind == "exact" else Tolerance(exact=False, atol=torch.full(e.shape, 1e-3, dtype=torch.float64))
    try:
        torch.testing.assert_close(a, e, rtol=0, atol=1e-3, equal_nan=True)
        agrees = True
    except AssertionError:
        agrees = False
    found = compare(RunResult("math", tensors={"backward": {"grad:x0": e}}),
                    RunResult("eager", tensors={"backward": {"grad:x0": a}}), _ByRole({"grad:x0": tol}))
    assert (found == []) == agrees, (pairs, found)
