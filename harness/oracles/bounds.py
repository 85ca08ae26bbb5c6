"""Per-tensor error bounds: how far a correct result may be from the math oracle, element by element.

Model (Wilkinson's running error analysis; Higham, "Accuracy and Stability of Numerical
Algorithms", ch. 3). Each floating-point operation rounds its result v to v(1 + d), |d| <= eps
for + - * (eps = 2 u, twice the unit roundoff u of the spec's dtype: room for compiled kernels
that reorder or contract) and |d| <= LIBRARY_ULPS * eps for sin, cos, tanh. To first order a
role is then off by at most sum_i |dr/dv_i| |v_i| |d_i| over the rounded intermediates v_i.

u per dtype (`unit_roundoff`): float64 2**-53, float32 2**-24, float16 2**-11 (10 stored
fraction bits), bfloat16 2**-8 (7 stored bits); complex64 and complex128 round each part as
float32 and float64 do. A complex sum rounds to |d| <= u, but a complex product computed from
its parts only to |d| <= sqrt(2) * gamma_2 ~ 2.83 u (Higham, Lemma 3.5), so complex graphs
take eps = COMPLEX_PRODUCT_FACTOR * 2 u. (Complex graphs use linear and square only:
harness.spec.COMPLEX_OPS.) float16 and bfloat16 CPU kernels compute in float32 and round
once, which this bound covers; so do compiled kernels that keep float32 between ops.

We compute that sum with an *absolute-value twin*: the graph run again by the math oracle (so
every role, forward to double backward, forward AD and hook-seen gradients, comes out under its
own name), in float64, on |leaves|, |loss weights|, |tangents|, |coeff|, |bias|, with each op f
replaced by a majorant F: |f(x)| <= F(X) and |f'(x)| <= F'(X) (and |f''(x)| <= F''(X) under
double backward) whenever |x| <= X:
    linear: X    square: X^2    sin, tanh: X, plus 2 X^2 under double backward.
A twin value A therefore bounds every partial sum and product met while computing that role: the
bound of a tensor follows cancellation among its OWN summands, never the graph's largest value.
Each Function's outputs are also scaled by (1 + k eta), k its rounding count (`ROUNDINGS` per
term in forward, backward and jvp, plus the sums of gradients from a value's consumers). The
scale flows into every gradient and tangent through that Function, so D = dA/deta is the sum
above in units of eps, errors inherited from earlier ops included and amplified as the real
ops amplify them (a square doubles a relative error). D is a forward difference, which never
underestimates: A is a polynomial in eta with non-negative coefficients, so convex.

Both values of eta (0 and ETA) run at once, in one rerun (`_twin`): every twin tensor has a
leading dimension of 2 (after the view index of a leaf with views), the same inputs in both
halves, and each Function output's half 1 is multiplied by its 1 + k eta after the oracle made
it. Scaling the output is scaling its coefficients and bias (the derivative of the product is
the scale): the same A in exact arithmetic, and in float64 within ~1e-11 of it relatively.

Bound per element: 2 eps (D + SLACK A) + k_total tiny. Twice, because both sides of a
comparison round; SLACK covers the few roundings outside Functions (a retained second backward
adds to .grad); tiny (smallest normal number) covers underflow and flush-to-zero.
Where the twin exceeds the largest finite value of the spec's dtype, some intermediate of that
element may overflow on one side of a comparison and not on the other (a compiled kernel that
keeps float32 between float16 ops does not overflow where eager does), so the element's bound
is infinite and it is not compared at all (`OVERFLOW`). In float32 and float64 that takes values
near 3e38; in float16 already 65504, which squares of sums reach.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable, Sequence

import torch

from harness.build import Applier, BuiltGraph, GeneratedFunction, oracle_functions
from harness.oracles.compare import Tolerance
from harness.oracles.math import OracleError, math_applier_for
from harness.run import RunResult, run_graph
from harness.spec import GraphSpec, LeafSpec, OutputSpec, Term

#: accuracy of sin, cos, tanh in eager libm/SLEEF and in compiled kernels, in ulps
LIBRARY_ULPS = 4
#: roundings (in eps) per term: forward (op, times coeff, add), backward (derivative, times
#: gradient, times coeff, accumulate) and jvp alike; tanh's derivative 1 - tanh(x)^2 squares the
#: library error and cancels against 1 (relative to 1 + tanh^2 <= 2, F' = 1)
ROUNDINGS = {"linear": 2, "square": 4, "sin": 2 * LIBRARY_ULPS + 4, "tanh": 3 * LIBRARY_ULPS + 6}
#: a second backward goes through the first one's graph: once more as many roundings
DOUBLE_BACKWARD_FACTOR = 2
SLACK = 2
ETA = 2.0 ** -20
#: a complex product rounds to sqrt(2) * gamma_2 ~ 2.83 u, a real one to u (see the docstring)
COMPLEX_PRODUCT_FACTOR = 2
#: the bound of an element that may overflow: harness.oracles.compare skips such elements
OVERFLOW = torch.inf


def unit_roundoff(dtype: torch.dtype) -> float:
    """u of a floating-point or complex dtype: half the distance from 1 to the next number
    (float16 2**-11, bfloat16 2**-8, float32 and complex64 2**-24, float64 and complex128 2**-53)."""
    return torch.finfo(dtype).eps / 2  # finfo of a complex dtype is that of its parts


def rounding_bound(dtype: torch.dtype) -> float:
    """eps of the model: the largest relative error of one + - * (twice u, see the docstring)."""
    return 2 * unit_roundoff(dtype) * (COMPLEX_PRODUCT_FACTOR if dtype.is_complex else 1)


class Tolerances:
    """An elementwise error bound per (checkpoint, role); see the module docstring.

    Given a function instead of the bounds, they are computed at the first `for_role`: the
    comparisons ask for a role's bound only where the two sides are not bit-identical (an
    identical pair is within any bound), which is every role of about 98% of generated
    examples, so most examples never pay for the twin's rerun."""

    def __init__(self, bounds: dict[tuple[str, str], torch.Tensor | None]
                 | Callable[[], dict[tuple[str, str], torch.Tensor | None]]) -> None:
        self._bounds = bounds

    @property
    def bounds(self) -> dict[tuple[str, str], torch.Tensor | None]:
        if callable(self._bounds):
            self._bounds = self._bounds()
        return self._bounds

    def for_role(self, checkpoint: str, role: str) -> Tolerance:
        if (checkpoint, role) not in self.bounds:
            raise KeyError(f"no error bound for {checkpoint} {role}: the absolute-value twin records the "
                           f"roles of run_graph; a new tensor role needs its bound here.")
        bound = self.bounds[checkpoint, role]
        # None: the oracle has no tensor there (a None gradient), so every contribution is an exact zero
        return Tolerance(exact=False, atol=0.0 if bound is None else bound)


def error_bounds(built: BuiltGraph) -> Tolerances:
    """Per-role error bounds for the graph `built` (any dtype and device)."""
    spec = built.spec
    eps = rounding_bound(built.dtype)
    tiny = torch.finfo(built.dtype).tiny
    largest = torch.finfo(built.dtype).max
    total_roundings = sum(_output_roundings(spec, o) for fn in spec.functions for o in fn.outputs)
    twin = _twin(built)
    bounds: dict[tuple[str, str], torch.Tensor | None] = {key: None for key, pair in twin.items() if pair is None}
    present = [(key, pair) for key, pair in twin.items() if pair is not None]
    if not present:
        return Tolerances(bounds)
    # every role's elements in one tensor: the same elementwise arithmetic, a few kernels per example
    a = torch.cat([plain.reshape(-1) for _, (plain, _) in present])
    a_eta = torch.cat([scaled.reshape(-1) for _, (_, scaled) in present])
    d = (a_eta - a) / ETA
    bound = 2 * eps * (d + SLACK * a) + total_roundings * tiny
    bound = torch.where(torch.isfinite(bound) & (a_eta <= largest), bound, OVERFLOW).cpu()
    for (key, (plain, _)), part in zip(present, bound.split([plain.numel() for _, (plain, _) in present])):
        bounds[key] = part.view(plain.shape)
    return Tolerances(bounds)


# --- the absolute-value twin ------------------------------------------------------------------


def _consumers(spec: GraphSpec) -> int:
    """Most gradient contributions summed into one value: its readers, plus the loss for outputs."""
    reads = Counter(a.ref for fn in spec.functions for a in fn.args if a.ref is not None)
    reads.update(r for r in spec.value_refs() if r.startswith("f"))
    return max(reads.values(), default=1)


def _output_roundings(spec: GraphSpec, out: OutputSpec) -> int:
    factor = DOUBLE_BACKWARD_FACTOR if spec.backward == "double" else 1
    accumulate = _consumers(spec)
    if out.kind == "compute":
        return factor * sum(ROUNDINGS[t.op] for t in out.terms) + accumulate
    if out.kind == "dirty":
        return factor * ROUNDINGS["linear"] + accumulate
    if out.kind in ("input", "view"):
        return accumulate  # no rounding of their own
    return 0  # const


def _twin_output(spec: GraphSpec, out: OutputSpec) -> OutputSpec:
    curvature = spec.backward == "double"
    if out.kind == "compute":
        terms: list[Term] = []
        for t in out.terms:
            c = abs(t.coeff)
            if t.op == "square":
                terms.append(Term(t.slot, "square", c))
            else:
                terms.append(Term(t.slot, "linear", c))
                if t.op != "linear" and curvature:
                    terms.append(Term(t.slot, "square", 2 * c))
        return dataclasses.replace(out, terms=tuple(terms), bias=abs(out.bias))
    if out.kind == "dirty":
        return dataclasses.replace(out, coeff=abs(out.coeff))
    if out.kind in ("input", "view"):  # computed in the twin, so that it can carry the scale
        return OutputSpec("compute", terms=(Term(out.slot, "linear"),))
    return out


def _twin_spec(spec: GraphSpec) -> GraphSpec:
    """The twin's graph: majorants of the ops, |coefficients|, in float64 (the scale by
    1 + k eta is applied to the outputs by the rerun: `_output_scales`)."""
    functions = tuple(
        dataclasses.replace(fn, outputs=tuple(_twin_output(spec, o) for o in fn.outputs),
                            style="old", vmap=False, save=("inputs",), error=None, api="function",
                            vmap_rule="generate")
        for fn in spec.functions)
    return dataclasses.replace(spec, dtype="float64", functions=functions, trace=False)


def _output_scales(spec: GraphSpec, eta: float) -> list[tuple[float, ...]]:
    """1 + k eta per output of each Function, k its rounding count."""
    return [tuple(1 + _output_roundings(spec, o) * eta for o in fn.outputs) for fn in spec.functions]


@dataclasses.dataclass(frozen=True)
class _Float64Graph(BuiltGraph):
    """A float64 rerun of `real`: its leaves, loss weights and forward-AD tangents, passed
    through `inputs`."""

    real: BuiltGraph
    inputs: Callable[[torch.Tensor], torch.Tensor]

    def make_leaves(self, generator_offset: int = 0) -> list[torch.Tensor]:
        return [self.rerun_input(leaf.detach()).requires_grad_(leaf.requires_grad)
                for leaf in self.real.make_leaves(generator_offset)]

    def weights(self, count: int, offset: int = 1_000_003) -> list[torch.Tensor]:
        return [self.rerun_input(w) for w in self.real.weights(count, offset)]

    def leaf_tangents(self, leaves: Sequence[torch.Tensor]) -> list[torch.Tensor | None]:
        """The real graph's tangents (a float32 graph's differ from those drawn in float64)."""
        return [None if t is None else self.rerun_input(t)
                for t in self.real.leaf_tangents(self.real.make_leaves())]

    def rerun_input(self, t: torch.Tensor) -> torch.Tensor:
        """`inputs(t)` in the rerun's dtype (float64, or complex128 for complex values); an
        int64 / bool mask as float64 (build._masked casts it to the dtype anyway)."""
        if t.dtype == torch.bool:
            t = t.to(torch.int64)  # torch.abs has no bool kernel
        t = self.inputs(t)
        return t.to(self.dtype if t.is_complex() else torch.float64)


def rerun_in_float64(real: BuiltGraph, spec: GraphSpec,
                     inputs: Callable[[torch.Tensor], torch.Tensor] = lambda t: t) -> RunResult:
    """Run `spec` (float64 or complex128, the structure of real.spec) by the math oracle on
    the real graph's leaves, loss weights and forward-AD tangents, each passed through `inputs`."""
    f64 = _Float64Graph(spec, oracle_functions(spec, real.device), real.device, real, inputs)
    return _rerun(f64, math_applier_for(spec))  # (reads clones of what is modified in place after the forward)


def _rerun(graph: BuiltGraph, apply: Applier) -> RunResult:
    result = run_graph(graph, apply, "float64", lifetimes=False)
    if result.status == "error":
        raise OracleError(f"the float64 rerun raised {result.describe_error()}") from result.error
    return result


@dataclasses.dataclass(frozen=True)
class _TwinGraph(_Float64Graph):
    """The twin's rerun, eta = 0 and eta = ETA at once: every input twice, along a new dimension
    of 2 before the graph's shape (a leaf with views: (views, 2, *shape), so that its views are
    (2, *shape) like every other value)."""

    def make_leaves(self, generator_offset: int = 0) -> list[torch.Tensor]:
        return [self._twice(leaf.detach(), spec).requires_grad_(leaf.requires_grad)
                for leaf, spec in zip(super().make_leaves(generator_offset), self.spec.leaves)]

    def weights(self, count: int, offset: int = 1_000_003) -> list[torch.Tensor]:
        return [self._twice(w) for w in super().weights(count, offset)]

    def leaf_tangents(self, leaves: Sequence[torch.Tensor]) -> list[torch.Tensor | None]:
        return [None if t is None else self._twice(t, spec)
                for t, spec in zip(super().leaf_tangents(leaves), self.spec.leaves)]

    def _twice(self, t: torch.Tensor, leaf: LeafSpec | None = None) -> torch.Tensor:
        """t in both halves, on the graph's device: a CPU scalar leaf beside CUDA ones
        (LeafSpec.on_cpu) is no scalar once it has the dimension of 2."""
        return torch.stack([t, t], dim=1 if leaf is not None and leaf.views else 0).to(self.device)


def _twin(real: BuiltGraph) -> dict[tuple[str, str], tuple[torch.Tensor, torch.Tensor] | None]:
    """(A at eta = 0, A at eta = ETA) per (checkpoint, role) of the absolute-value twin of
    `real`; None where the oracle has no tensor (a None gradient)."""
    spec = real.spec
    twin_spec = _twin_spec(spec)
    graph = _TwinGraph(twin_spec, oracle_functions(twin_spec, real.device), real.device, real, _majorant)
    math = math_applier_for(twin_spec)
    scales = _output_scales(spec, ETA)
    ndim = len(spec.shape)

    def apply(n: int, cls: type[GeneratedFunction], args: Sequence[Any]) -> Any:
        out = math(n, cls, args)
        fn = twin_spec.functions[n]
        outs = [o if not isinstance(o, torch.Tensor) else _scale_second_half(o, ndim, scale)
                for o, scale in zip(out if fn.tuple_output else (out,), scales[n])]
        return tuple(outs) if fn.tuple_output else outs[0]

    pairs: dict[tuple[str, str], tuple[torch.Tensor, torch.Tensor] | None] = {}
    for checkpoint, roles in _rerun(graph, apply).tensors.items():
        for role, t in roles.items():
            if t is None:
                pairs[checkpoint, role] = None
                continue
            # the dimension of 2: first, or second where a leaf with views leads with them
            halves = t.unbind(t.dim() - ndim - 1)
            if len(halves) != 2 or t.dim() - ndim not in (1, 2):
                raise OracleError(f"the twin's {checkpoint} {role} has shape {tuple(t.shape)}, not (2, *{spec.shape})")
            pairs[checkpoint, role] = (halves[0], halves[1])
    return pairs


def _scale_second_half(t: torch.Tensor, ndim: int, scale: float) -> torch.Tensor:
    """[t[0], scale * t[1]] of a twin value (2, *shape); a value (*shape) that the oracle made
    from constants alone (no terms) is the same in both halves. By Scalar overloads, select and
    stack, which forward AD differentiates in C++ (see build._computed)."""
    if t.dim() == ndim:
        t = t.expand(2, *t.shape)
    return torch.stack([t[0], torch.ops.aten.mul.Scalar(t[1], scale)])


def _majorant(t: torch.Tensor) -> torch.Tensor:
    """What the twin reads for an input: |t|; for an int64 mask at least 1, so that the twin
    of a masked output still bounds what is masked (where that overflows, inf * 0 = nan)."""
    return t.abs() if t.is_floating_point() or t.is_complex() else t.abs().clamp_min(1)


__all__ = ["COMPLEX_PRODUCT_FACTOR", "LIBRARY_ULPS", "OVERFLOW", "ROUNDINGS", "Tolerances", "error_bounds",
           "rerun_in_float64", "rounding_bound", "unit_roundoff"]
