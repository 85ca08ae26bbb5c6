"""Compare two RunResults tensor by tensor, with per-tensor, dtype-aware tolerances.

Every role at every checkpoint is checked before anything is reported (nnsmith once
returned after the first mismatch).

Two paths that run the same forward/backward code must agree bit-for-bit (`EXACT`).
Against the math oracle, or between paths that compile differently, results differ by
rounding only: `harness.oracles.bounds.error_bounds` gives each role its own elementwise
bound (`Tolerances`), from that tensor's own sensitivity to every rounding. Elements whose
bound is too wide to tell a 1.5x error from rounding (`Tolerance.wide`) are still compared and
counted `unchecked at this precision`; elements that may overflow on one side only (an
infinite bound) are not compared and are counted too (`Uncompared`). Tensors of different
dtypes are a difference of their own, and their values are still compared, after promotion.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import torch

from harness.oracles.lifetimes import without_lifetimes
from harness.oracles.math import completed
from harness.run import RunResult


@dataclass(frozen=True)
class Mismatch:
    path: str
    against: str
    checkpoint: str
    role: str
    detail: str
    max_abs: float = 0.0
    max_rel: float = 0.0

    def describe(self) -> str:
        """Where and how it differs, without the two sides' names."""
        err = f" (max abs err {self.max_abs:.3g}, max rel err {self.max_rel:.3g})" if self.max_abs else ""
        return f"{self.checkpoint} {self.role}: {self.detail}{err}"

    def __str__(self) -> str:
        return f"{self.path} vs {self.against}: {self.describe()}"


@dataclass(frozen=True, eq=False)
class Tolerance:
    """|a - e| <= atol + rtol * |e|, per element; exact means bit-identical.

    atol may be a tensor of the compared shape: a bound per element. wide (bool, that shape):
    the elements whose bound is too wide to catch a 1.5x error (bounds.UNCHECKED_SHARE)."""

    exact: bool = True
    rtol: float = 0.0
    atol: float | torch.Tensor = 0.0
    wide: torch.Tensor | None = None


@dataclass
class Uncompared:
    """Elements that differ between the two sides and that a comparison could not judge, per
    "checkpoint role": `unchecked` (within a bound too wide to catch a 1.5x error: "unchecked at
    this precision") and `overflowed` (may overflow on one side only: not compared)."""

    unchecked: Counter = field(default_factory=Counter)
    overflowed: Counter = field(default_factory=Counter)

    def add(self, other: Uncompared) -> None:
        self.unchecked.update(other.unchecked)
        self.overflowed.update(other.overflowed)

    def __bool__(self) -> bool:
        return bool(+self.unchecked or +self.overflowed)

    def describe(self) -> str:
        """One line: the counts, largest first, in words."""
        parts = []
        for what, counts in (("unchecked at this precision", self.unchecked), ("may overflow, not compared",
                                                                                self.overflowed)):
            if +counts:
                roles = ", ".join(f"{role} {n}" for role, n in counts.most_common())
                total = sum(counts.values())
                parts.append(f"{total} element{'' if total == 1 else 's'} {what} ({roles})")
        return "; ".join(parts)


EXACT = Tolerance()

#: torch.testing.assert_close's documented default (rtol, atol) per dtype: the tolerance for
#: comparing one computation done by two kernels when nothing is known of its ops (a user's
#: own Function, harness.function_check), where a generated graph has its error bounds
DTYPE_TOLERANCES = {
    torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7), torch.complex32: (1e-3, 1e-5), torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


def dtype_tolerance(dtype: torch.dtype) -> Tolerance:
    """DTYPE_TOLERANCES' entry for `dtype`; exact for the others (integers, bool)."""
    rtol, atol = DTYPE_TOLERANCES.get(dtype, (0.0, 0.0))
    return Tolerance(exact=False, rtol=rtol, atol=atol) if rtol or atol else EXACT


class Tolerances:
    """An elementwise error bound per (checkpoint, role); harness.oracles.bounds computes them.

    Given a function instead of the bounds, they are computed at the first `for_role`: the
    comparisons ask for a role's bound only where the two sides are not bit-identical (an
    identical pair is within any bound), which is every role of about 98% of generated
    examples, so most examples never pay for the rerun. A bound is a Tolerance, or a tensor
    (None: the oracle has no tensor there, a None gradient, so every contribution is an exact zero)."""

    def __init__(self, bounds: dict[tuple[str, str], Tolerance | torch.Tensor | None]
                 | Callable[[], dict[tuple[str, str], Tolerance | torch.Tensor | None]]) -> None:
        self._bounds = bounds

    @property
    def bounds(self) -> dict[tuple[str, str], Tolerance | torch.Tensor | None]:
        if callable(self._bounds):
            self._bounds = self._bounds()
        return self._bounds

    def for_role(self, checkpoint: str, role: str) -> Tolerance:
        if (checkpoint, role) not in self.bounds:
            raise KeyError(f"no error bound for {checkpoint} {role}: the float64 rerun records the "
                           f"roles of run_graph; a new tensor role needs its bound here.")
        bound = self.bounds[checkpoint, role]
        if isinstance(bound, Tolerance):
            return bound
        return Tolerance(exact=False, atol=0.0 if bound is None else bound)


@dataclass(frozen=True)
class DtypeTolerances:
    """dtype_tolerance of each compared tensor's own dtype (as the expected side has it)."""

    expected: RunResult

    def for_role(self, checkpoint: str, role: str) -> Tolerance:
        t = self.expected.tensors.get(checkpoint, {}).get(role)
        return dtype_tolerance(t.dtype if t is not None else torch.float32)


def compare(expected: RunResult, actual: RunResult, tol: Tolerance | Tolerances | DtypeTolerances, *,
            none_is_zero: bool = False, uncompared: Uncompared | None = None) -> list[Mismatch]:
    """Every difference between two results that both ran to completion.

    tol: one Tolerance for every role (EXACT), or Tolerances with a bound per role.

    none_is_zero: a missing gradient (None) equals an all-zero one; used against the
    math oracle, whose graph differs in structure, never between paths.

    uncompared: where the elements that differ and could not be judged are counted.
    """
    out: list[Mismatch] = []

    def miss(checkpoint: str, role: str, detail: str, a: float = 0.0, r: float = 0.0) -> None:
        out.append(Mismatch(actual.path, expected.path, checkpoint, role, detail, a, r))

    for checkpoint in sorted(set(expected.tensors) | set(actual.tensors)):
        e_roles = expected.tensors.get(checkpoint, {})
        a_roles = actual.tensors.get(checkpoint, {})
        details: dict[str, list[tuple]] = {}
        elementwise: list[tuple[str, torch.Tensor, torch.Tensor]] = []
        for role in sorted(set(e_roles) | set(a_roles)):
            if role not in e_roles or role not in a_roles:
                details[role] = [("present on one side only",)]
                continue
            e, a = e_roles[role], a_roles[role]
            structural = _structural_difference(e, a, none_is_zero)
            details[role] = [] if structural is None else [structural]
            if structural is None and e is not None and a is not None:
                if e.dtype != a.dtype:  # a difference of its own, and the values are still compared
                    details[role].append((f"dtype {a.dtype}, expected {e.dtype}",))
                    e, a = _promoted(e, a)
                elementwise.append((role, e, a))
        # bit-identical pairs agree under every tolerance: the bounds are asked for (and, lazily
        # given, computed) only where some pair differs
        if not _all_within([(*pair, EXACT) for pair in elementwise]):
            with_tol = [(role, e, a, tol if isinstance(tol, Tolerance) else tol.for_role(checkpoint, role))
                        for role, e, a in elementwise]
            if not _all_within(with_tol):
                for role, e, a, role_tol in with_tol:
                    difference = _tensor_difference(e, a, role_tol)
                    if difference is not None:
                        details[role].append(difference)
            if uncompared is not None:
                for role, e, a, role_tol in with_tol:
                    _count_uncompared(f"{checkpoint} {role}", e, a, role_tol, uncompared)
        for role, found in details.items():
            for detail in found:
                miss(checkpoint, role, *detail)
    for checkpoint in sorted(set(expected.values) | set(actual.values)):
        e_vals = expected.values.get(checkpoint, {})
        a_vals = actual.values.get(checkpoint, {})
        if e_vals == a_vals and all(type(v) is type(a_vals[r]) for r, v in e_vals.items()):
            continue  # _same_value of every role (nan is nan only where the very object is on both sides)
        for role in sorted(set(e_vals) | set(a_vals)):
            e, a = e_vals.get(role, "<absent>"), a_vals.get(role, "<absent>")
            if not _same_value(e, a):
                miss(checkpoint, role, f"expected {e!r}, got {a!r}")
    return out


def _without_probes(result: RunResult) -> RunResult:
    """Native probe counts differ between eager and native by design (eager's ctx owns its
    node); they are compared between owned and borrowed only."""
    return replace(result, values=without_lifetimes(result.values, keep_life=True))


def against_eager(eager: RunResult, result: RunResult, tol: Tolerance | Tolerances | DtypeTolerances, *,
                  lifetimes: bool = True, reference: str = "eager",
                  uncompared: Uncompared | None = None) -> list[Mismatch]:
    """A path's run against eager's: an error must be eager's own (the same type at the same
    checkpoint), and what completed is compared value by value; native probe counts aside.

    lifetimes=False: a path whose checkpoints cannot match eager's (docs/compiled.md) is
    held to the expected-lifetime rules only. reference: what `eager` is called in the
    mismatches (the twin oracle compares a path with its own twin the same way). uncompared:
    where the elements not judged are counted."""
    eager, result = _without_probes(eager), _without_probes(result)
    if not lifetimes:
        eager, result = (replace(r, values=without_lifetimes(r.values, keep_life=False))
                         for r in (eager, result))
    if eager.status == "error" or result.status == "error":
        if eager.status == "error" and result.status == "error":
            if eager.error_checkpoint != result.error_checkpoint or type(eager.error) is not type(result.error):
                return [Mismatch(result.path, reference, result.error_checkpoint, "error",
                                 f"raised {result.describe_error()}; {reference} raised {eager.describe_error()}")]
            return compare(completed(eager), completed(result), tol, uncompared=uncompared)
        who, what = (result, f"{reference} ran without error") if result.status == "error" else (
            eager, f"{result.path} ran without error")
        return [Mismatch(result.path, reference, who.error_checkpoint, "error",
                         f"{reference if who is eager else who.path} raised {who.describe_error()}; {what}")]
    return compare(eager, result, tol, uncompared=uncompared)


def _same_value(e: Any, a: Any) -> bool:
    if isinstance(e, float) and isinstance(a, float) and math.isnan(e) and math.isnan(a):
        return True
    return type(e) is type(a) and e == a


def _structural_difference(e: torch.Tensor | None, a: torch.Tensor | None, none_is_zero: bool
                           ) -> tuple[str] | None:
    """What differs besides the elements and stops their comparison: a missing tensor (unless
    none_is_zero and the present one is all zeros), the shape. (A dtype difference does not
    stop it: compare reports it and compares the values promoted.)"""
    if e is None or a is None:
        if e is None and a is None:
            return None
        present = a if e is None else e
        if none_is_zero and not bool((present != 0).any()):
            return None
        return ("expected None" if e is None else "got None, expected a tensor",)
    if e.shape != a.shape:
        return (f"shape {tuple(a.shape)}, expected {tuple(e.shape)}",)
    return None


def _promoted(e: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both in the dtype torch promotes the pair to (float32 and float64: float64)."""
    common = torch.promote_types(e.dtype, a.dtype)
    return e.to(common), a.to(common)


def _count_uncompared(key: str, e: torch.Tensor, a: torch.Tensor, tol: Tolerance, into: Uncompared) -> None:
    """Count the elements that differ and were not judged: within a wide bound (unchecked at this
    precision) or under an infinite one (may overflow: not compared)."""
    if tol.exact or not isinstance(tol.atol, torch.Tensor):
        return
    e, a = e.detach().cpu(), a.detach().cpu()
    atol = tol.atol.expand(e.shape)
    differ = ~_same_non_finite(e, a)
    overflowed = differ & ~torch.isfinite(atol)
    if tol.wide is not None:
        common = torch.complex128 if e.is_complex() else torch.float64
        within = (a.to(common) - e.to(common)).abs() <= atol  # (outside it: a mismatch, reported)
        into.unchecked[key] += int((tol.wide.expand(e.shape) & differ & within).sum())
    into.overflowed[key] += int(overflowed.sum())
    if not into.unchecked[key]:
        del into.unchecked[key]
    if not into.overflowed[key]:
        del into.overflowed[key]


def _all_within(pairs: list[tuple[str, torch.Tensor, torch.Tensor, Tolerance]]) -> bool:
    """Whether every pair (role, expected, actual, tolerance; same shapes and dtypes) agrees, by
    _tensor_difference's elementwise rule over all their elements at once: a few kernels per
    checkpoint instead of a dozen per role. False where it cannot tell at once (the pairs mix
    dtypes, devices or kinds of tolerance; one differs): _tensor_difference then decides per role."""
    if not pairs:
        return True
    first = pairs[0][1]
    exact, rtol = pairs[0][3].exact, pairs[0][3].rtol
    for _, e, _, t in pairs:
        if (e.dtype != first.dtype or e.device != first.device or t.exact != exact or t.rtol != rtol
                or (isinstance(t.atol, torch.Tensor) if exact else not _finite_or_tensor(t.atol))):
            return False
    # each on the CPU before the cat: a CPU scalar leaf's gradient stays on the CPU beside CUDA
    # tensors (LeafSpec.on_cpu), on one side of a comparison or both
    e = torch.cat([p[1].detach().reshape(-1).cpu() for p in pairs])
    a = torch.cat([p[2].detach().reshape(-1).cpu() for p in pairs])
    if exact:
        return torch.equal(e, a) or bool(_same_non_finite(e, a).all())
    atol = torch.cat([t.atol.to(torch.float64).expand(p.shape).reshape(-1) if isinstance(t.atol, torch.Tensor)
                      else torch.full((p.numel(),), t.atol, dtype=torch.float64) for _, p, _, t in pairs])
    wide = torch.complex128 if e.is_complex() else torch.float64
    e_finite, a_finite = torch.isfinite(e), torch.isfinite(a)
    within = (a.to(wide) - e.to(wide)).abs() <= atol + rtol * e.to(wide).abs()
    # an element is compared where its bound is finite (bounds.OVERFLOW is not); a finite expected
    # value needs a finite actual one within the bound, a non-finite one the same (_same_non_finite)
    agree = ~torch.isfinite(atol) | (e_finite & a_finite & within) | (~e_finite & _same_non_finite(e, a))
    return bool(agree.all())


def _same_non_finite(e: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Elementwise, as torch.testing.assert_close judges non-finite values: an inf equals only the
    inf of the same sign, a nan only a nan (equal_nan); a complex element is nan when a part is."""
    return (e == a) | (e.isnan() & a.isnan())


def _finite_or_tensor(atol: float | torch.Tensor) -> bool:
    return isinstance(atol, torch.Tensor) or math.isfinite(atol)


def _tensor_difference(e: torch.Tensor, a: torch.Tensor, tol: Tolerance) -> tuple[str, float, float] | None:
    e, a = e.detach().cpu(), a.detach().cpu()
    if isinstance(tol.atol, torch.Tensor) and not bool(torch.isfinite(tol.atol).all()):
        # an infinite bound: the element may overflow on one side only (bounds.OVERFLOW); not compared
        compared = torch.isfinite(tol.atol).expand(e.shape)
        e, a, tol = e[compared], a[compared], Tolerance(tol.exact, tol.rtol, tol.atol.expand(e.shape)[compared])
    if tol.exact:
        if torch.equal(e, a) or bool(_same_non_finite(e, a).all()):
            return None
        abs_err, rel_err = _errors(e, a)
        return ("not bit-identical", abs_err, rel_err)
    e_finite = torch.isfinite(e)
    # a value that may overflow on one side only has an infinite bound and is not compared (above):
    # every other non-finite value must be matched as torch.testing.assert_close matches it
    if bool((e_finite & ~torch.isfinite(a)).any()):
        return ("not finite where expected is finite",)
    if not bool(_same_non_finite(e, a)[~e_finite].all()):
        return ("a non-finite value differs (inf of the other sign, nan against inf, or finite against it)",)
    # in float64 (complex128), so that the difference itself is exact; for complex values, the
    # modulus of the difference, the error the bounds bound
    wide = torch.complex128 if e.is_complex() else torch.float64
    diff = (a.to(wide) - e.to(wide)).abs()[e_finite]
    bound = (tol.atol + tol.rtol * e.to(wide).abs())[e_finite]
    if bool((diff <= bound).all()):
        return None
    abs_err, rel_err = _errors(e, a)
    if isinstance(tol.atol, torch.Tensor):
        worst = float((diff / bound).nan_to_num(nan=0.0, posinf=float("inf")).max())
        return (f"outside tolerance (per-element error bound; worst error is {worst:.3g} x its bound)",
                abs_err, rel_err)
    return (f"outside tolerance rtol={tol.rtol:.2g} atol={tol.atol:.2g}", abs_err, rel_err)


def _errors(e: torch.Tensor, a: torch.Tensor) -> tuple[float, float]:
    finite = torch.isfinite(e) & torch.isfinite(a)
    if not bool(finite.any()):
        return (float("nan"), float("nan"))
    diff = (a - e).abs()[finite]
    rel = diff / e.abs()[finite].clamp_min(torch.finfo(e.dtype).tiny)
    return float(diff.max()), float(rel.max())


__all__ = ["DTYPE_TOLERANCES", "DtypeTolerances", "EXACT", "Mismatch", "Tolerance", "Tolerances", "Uncompared",
           "against_eager", "compare", "dtype_tolerance"]
