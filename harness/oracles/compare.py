"""Compare two RunResults tensor by tensor, with dtype-aware tolerances.

Every role at every checkpoint is checked before anything is reported (nnsmith once
returned after the first mismatch).

Tolerance model. Two paths that run the same forward/backward code must agree
bit-for-bit (`exact=True`). Against the math oracle the backward formulas differ in
op order, so results differ by rounding only. A value built from n floating-point
operations on numbers of magnitude at most M is off by at most about n * eps * M
(Higham, "Accuracy and Stability of Numerical Algorithms", ch. 3); we take n as the
number of arithmetic steps in the graph (`Tolerance.for_graph`) and M as the largest
magnitude seen anywhere in the expected result (so cancellation is covered).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from harness.run import RunResult
from harness.spec import GraphSpec


@dataclass(frozen=True)
class Mismatch:
    path: str
    against: str
    checkpoint: str
    role: str
    detail: str
    max_abs: float = 0.0
    max_rel: float = 0.0

    def __str__(self) -> str:
        err = f" (max abs err {self.max_abs:.3g}, max rel err {self.max_rel:.3g})" if self.max_abs else ""
        return f"{self.path} vs {self.against}: {self.checkpoint} {self.role}: {self.detail}{err}"


@dataclass(frozen=True)
class Tolerance:
    """|a - e| <= atol + rtol * |e|, per element; exact means bit-identical."""

    exact: bool = True
    rtol: float = 0.0
    atol: float = 0.0

    @staticmethod
    def for_graph(spec: GraphSpec, magnitude: float) -> "Tolerance":
        eps = torch.finfo(getattr(torch, spec.dtype)).eps
        steps = 4 + sum(2 * len(o.terms) + 2 for fn in spec.functions for o in fn.outputs)
        steps *= 3 if spec.backward == "double" else 1
        rtol = steps * eps
        return Tolerance(exact=False, rtol=rtol, atol=rtol * max(1.0, magnitude))


EXACT = Tolerance()


def magnitude(result: RunResult) -> float:
    """Largest finite magnitude among all tensors of a result."""
    m = 0.0
    for roles in result.tensors.values():
        for t in roles.values():
            if t is not None and t.numel() and t.is_floating_point():
                finite = t[torch.isfinite(t)]
                if finite.numel():
                    m = max(m, float(finite.abs().max()))
    return m


def compare(expected: RunResult, actual: RunResult, tol: Tolerance, *,
            none_is_zero: bool = False) -> list[Mismatch]:
    """Every difference between two results that both ran to completion.

    none_is_zero: a missing gradient (None) equals an all-zero one; used against the
    math oracle, whose graph differs in structure, never between paths.
    """
    out: list[Mismatch] = []

    def miss(checkpoint: str, role: str, detail: str, a: float = 0.0, r: float = 0.0) -> None:
        out.append(Mismatch(actual.path, expected.path, checkpoint, role, detail, a, r))

    for checkpoint in sorted(set(expected.tensors) | set(actual.tensors)):
        e_roles = expected.tensors.get(checkpoint, {})
        a_roles = actual.tensors.get(checkpoint, {})
        for role in sorted(set(e_roles) | set(a_roles)):
            if role not in e_roles or role not in a_roles:
                miss(checkpoint, role, "present on one side only")
                continue
            detail = _tensor_difference(e_roles[role], a_roles[role], tol, none_is_zero)
            if detail is not None:
                miss(checkpoint, role, *detail)
    for checkpoint in sorted(set(expected.values) | set(actual.values)):
        e_vals = expected.values.get(checkpoint, {})
        a_vals = actual.values.get(checkpoint, {})
        for role in sorted(set(e_vals) | set(a_vals)):
            e, a = e_vals.get(role, "<absent>"), a_vals.get(role, "<absent>")
            if not _same_value(e, a):
                miss(checkpoint, role, f"expected {e!r}, got {a!r}")
    return out


def _same_value(e: Any, a: Any) -> bool:
    if isinstance(e, float) and isinstance(a, float) and math.isnan(e) and math.isnan(a):
        return True
    return type(e) is type(a) and e == a


def _tensor_difference(e: torch.Tensor | None, a: torch.Tensor | None, tol: Tolerance,
                       none_is_zero: bool) -> tuple[str, float, float] | tuple[str] | None:
    if e is None or a is None:
        if e is None and a is None:
            return None
        present = a if e is None else e
        if none_is_zero and not bool((present != 0).any()):
            return None
        return ("expected None" if e is None else "got None, expected a tensor",)
    if e.shape != a.shape:
        return (f"shape {tuple(a.shape)}, expected {tuple(e.shape)}",)
    if e.dtype != a.dtype:
        return (f"dtype {a.dtype}, expected {e.dtype}",)
    e, a = e.detach().cpu(), a.detach().cpu()
    if tol.exact:
        same = torch.equal(e, a) or bool(((e == a) | (e.isnan() & a.isnan())).all())
        if same:
            return None
        abs_err, rel_err = _errors(e, a)
        return ("not bit-identical", abs_err, rel_err)
    e_finite = torch.isfinite(e)
    # Where the expected value overflowed, rounding differences may turn inf into nan:
    # the actual value must be non-finite too, but need not match exactly.
    if bool((~e_finite & torch.isfinite(a)).any()) or bool((e_finite & ~torch.isfinite(a)).any()):
        return ("finite where expected is not, or the reverse",)
    diff = (a - e).abs()[e_finite]
    bound = (tol.atol + tol.rtol * e.abs())[e_finite]
    if bool((diff <= bound).all()):
        return None
    abs_err, rel_err = _errors(e, a)
    return (f"outside tolerance rtol={tol.rtol:.2g} atol={tol.atol:.2g}", abs_err, rel_err)


def _errors(e: torch.Tensor, a: torch.Tensor) -> tuple[float, float]:
    finite = torch.isfinite(e) & torch.isfinite(a)
    if not bool(finite.any()):
        return (float("nan"), float("nan"))
    diff = (a - e).abs()[finite]
    rel = diff / e.abs()[finite].clamp_min(torch.finfo(e.dtype).tiny)
    return float(diff.max()), float(rel.max())


__all__ = ["EXACT", "Mismatch", "Tolerance", "compare", "magnitude"]
