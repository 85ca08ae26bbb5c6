"""Per-tensor error bounds: how far a correct result may be from the math oracle, element by element.

Model: first-order rounding-error analysis at the example's own values (Higham, "Accuracy and
Stability of Numerical Algorithms", ch. 3; the "symbolic Taylor form" of FPTaylor, Solovyev et
al., TOPLAS 2018). Every quantity a correct implementation rounds is a *site* q with a local
error bound E_q; to first order a role r is then off by at most sum_q |dr/dq| E_q, where dr/dq
is the derivative of r with respect to an error made at q (the rest of the computation exact).

Rounding model. One operation rounds its result v to v(1 + d), |d| <= eps, eps = u the unit
roundoff of the graph's dtype (float64 2**-53, float32 2**-24, float16 2**-11, bfloat16 2**-8)
times COMPLEX_PRODUCT_FACTOR for complex dtypes (a complex product computed from its parts rounds
to sqrt(2) gamma_2 ~ 2.83 u, Higham Lemma 3.5; sums and real scalings to u). torch's CPU kernels
for float16 and bfloat16 compute each operation in float32 and round once (measured: mul, add,
x*x, pow 2, rsub, mul.Scalar, sin, cos, tanh and tanh_backward on half tensors are bit-identical
to the float32 operation rounded; CUDA's opmath and Inductor's upcast do the same), so sin, cos
and tanh cost LIBRARY_ULPS ulps of float32 plus one rounding to the half type there, and
LIBRARY_ULPS ulps of the dtype elsewhere. A compiled kernel that keeps float32 between half
operations, reorders a sum or contracts a multiply-add rounds less, never more, than counted.
Sums: a sum of m terms computed in any order is the exact sum of its terms each perturbed by
at most m - 1 roundings (backward stability of recursive summation, Higham 4.2), so a
summation's error is charged to its terms. Underflow: each rounding may add UNDERFLOW(dtype)
absolutely (gradual underflow of float16 results; flush-to-zero of float32 elsewhere).

Sites, per Function output (rounding counts in eps; f the op, x its input, c the coefficient,
g the gradient reaching the output, m its number of terms, N the gradient contributions summed
into x; `_Perturber` says how each is carried):
  value: y = bias + sum_t c_t f_t(x_t): each term (its op, times c, m adds) (`_FORWARD` + m)
         |c_t f_t(x)|, the bias m |bias|; a dirty output 1 |y|.
  derivative (sin, tanh): f'(x) itself rounded (cos as a library call; 1 - tanh^2 once, after
         squaring a rounded tanh: an absolute (2 library + 1) tanh^2 that no relative count
         covers). One error of a value that the gradient, the tangent and a second backward read.
  product: the first backward's g c f'(x), (`_PRODUCTS` + N - 1) |g c f'(x)|, as a value; the
         tangent's c f'(x) dx, (`_PRODUCTS` + m) |c f'(x) dx|.
  pass (an input returned as is or a view, a dirty output): the N - 1 adds of its gradient's
         sum, and the dirty product (gradient and tangent).
  second_g, second_c (under double backward): the second backward's products along the
         gradient path (what multiplies g: c f'(x)) and along the curvature path (g c f''(x),
         f'' itself rounded), 2 `_PRODUCTS` + N + 1 relative, plus tanh's absolute f'' error;
         each path's products share one error (no overflow test there).
Each site is its own slice of one float64 rerun of the math oracle (`_perturbed`): every input
has a leading dimension of 1 + sites (after the view index of a leaf with views), slice 0 is the
plain float64 rerun and slice q carries ETA E_q (in roundings, so that float64's own are not lost
below its resolution) at site q alone. Plain autograd carries them (a custom Function would run
through the very apply under test): a constant added to an output, exact zeros whose derivatives
are the error ((v - v) w on a view v of x of the term's own), and tensor hooks on those views
that add an error to the gradient they see. So |r_q - r_0| / ETA is |dr/dq| E_q, signs and
cancellation included (a tanh's gradient follows 1 - tanh^2 at the example's x, not a bound of
it over an interval). A complex site takes two slices, a real and an imaginary error: r moves by
A d + B conj(d), at most sqrt(|A + B|^2 + |A - B|^2) |d|.

Bound per element: 2 (eps (sum_q |r_q - r_0| / ETA + |r_0|) + underflow): twice, because both
sides of a comparison round; eps |r_0| for the role's own last rounding (a retained second
backward adds to .grad). The neglected second-order terms are O(eps^2) relative to the value.
Where it exceeds UNCHECKED_SHARE of |r_0| a 1.5x error could pass: the element is still compared
but reported `unchecked at this precision` (`Tolerance.wide`). Where an intermediate of a site
(its terms' magnitudes, or a gradient's |g| times its factors) exceeds the dtype's largest
finite value, one side may overflow and the other not (a compiled kernel that keeps float32
between float16 ops does not overflow where eager does): that site's error is infinite, every
element depending on it has bound OVERFLOW and is not compared, and comparisons count it.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable, Sequence

import torch

from harness.build import Applier, BuiltGraph, math_apply, oracle_functions
from harness.dataflow import Dataflow, differentiable
from harness.oracles.compare import Tolerance, Tolerances
from harness.oracles.math import OracleError, math_applier_for
from harness.run import RunResult, run_graph
from harness.spec import GraphSpec, LeafSpec, OutputSpec

#: accuracy of sin, cos, tanh in eager libm/SLEEF and in compiled kernels, in ulps of the
#: precision they compute in (float32 for float16 and bfloat16)
LIBRARY_ULPS = 4
#: a complex product rounds to sqrt(2) gamma_2 = 2 sqrt(2) u / (1 - 2 u) <= 3 u (see the docstring)
COMPLEX_PRODUCT_FACTOR = 3
#: an element whose bound exceeds this share of its value cannot tell a 1.5x error from rounding
UNCHECKED_SHARE = 0.25
#: the size of a site's error in its slice, relative to its bound
ETA = 2.0 ** -20
#: the bound of an element that may overflow: harness.oracles.compare does not compare it
OVERFLOW = torch.inf
#: roundings of one term's forward value after its op's: times the coefficient
_FORWARD = {"linear": 1, "square": 2}
#: roundings of the products of one term's gradient g c f'(x) (its tangent c f'(x) dx alike):
#: g*c and *f'; square through autograd: (g c) x twice and their sum
_PRODUCTS = {"linear": 1, "square": 3, "sin": 2, "tanh": 2}


def unit_roundoff(dtype: torch.dtype) -> float:
    """u of a floating-point or complex dtype: half the distance from 1 to the next number
    (float16 2**-11, bfloat16 2**-8, float32 and complex64 2**-24, float64 and complex128 2**-53)."""
    return torch.finfo(dtype).eps / 2  # finfo of a complex dtype is that of its parts


def rounding_bound(dtype: torch.dtype) -> float:
    """eps of the model: the largest relative error of one operation (see the docstring)."""
    return unit_roundoff(dtype) * (COMPLEX_PRODUCT_FACTOR if dtype.is_complex else 1)


def computes_in(dtype: torch.dtype) -> torch.dtype:
    """The precision torch computes an operation on `dtype` in before rounding to it (opmath)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def library_roundings(dtype: torch.dtype) -> float:
    """sin, cos or tanh of a `dtype` value, in roundings of eps: LIBRARY_ULPS ulps (2 u each)
    of the compute precision, plus one rounding to `dtype` when that is narrower."""
    compute = computes_in(dtype)
    ulps = 2 * LIBRARY_ULPS * unit_roundoff(compute) / unit_roundoff(dtype)
    return ulps + (1 if compute != dtype else 0)


def underflow(dtype: torch.dtype) -> float:
    """What one rounding may add absolutely near zero: half the spacing of float16's subnormals
    (its results are float32 values rounded with gradual underflow), else the smallest normal
    number of the compute precision (a kernel may flush subnormals to zero)."""
    compute = torch.finfo(computes_in(dtype))
    if dtype == torch.float16:
        return max(torch.finfo(dtype).tiny * unit_roundoff(dtype), compute.tiny)
    return compute.tiny


def error_bounds(built: BuiltGraph) -> Tolerances:
    """Per-role error bounds for the graph `built` (any dtype and device)."""
    model = _Model.of(built.spec, built.dtype)
    bounds: dict[tuple[str, str], Tolerance | torch.Tensor | None] = {}
    for key, slices in _perturbed(built, model).items():
        bounds[key] = None if slices is None else _bound(model, key, slices)
    return Tolerances(bounds)


def _bound(model: _Model, key: tuple[str, str], slices: torch.Tensor) -> Tolerance:
    """The Tolerance of one role from its slices (1 + sites, *shape)."""
    plain = slices[0]
    spread = (slices[1:] - plain).abs() / ETA  # |dr/dq| E_q, in roundings
    if model.phases == 2:
        # a complex error d at a site moves r by A d + B conj(d) (r need not be holomorphic in it):
        # at most (|A| + |B|) |d| <= sqrt(|A + B|^2 + |A - B|^2) |d|, the real and imaginary slices
        spread = spread.view(len(spread) // 2, 2, *spread.shape[1:]).pow(2).sum(1).sqrt()
    spread = spread.sum(0)
    value = plain.abs()
    absolute = model.tau * (1 + (model.second_order_sites if key[0] == "double_backward" else 0))
    bound = 2 * (model.eps * (spread + value) + absolute)
    overflow = ~torch.isfinite(bound) | (value + bound > model.largest)
    bound = torch.where(overflow, OVERFLOW, bound).cpu()
    return Tolerance(exact=False, atol=bound, wide=(bound > UNCHECKED_SHARE * value.cpu()) & ~overflow.cpu())


# --- the sites ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Model:
    """The rounding model of one graph: its sites (each a slice of the rerun, two for a complex
    dtype: a real and an imaginary error) and its dtype's constants."""

    spec: GraphSpec
    eps: float
    library: float  # roundings of sin, cos, tanh
    tau: float  # underflow per rounding

    def adds(self, ref: str) -> int:
        """The adds of the sum of the gradient contributions into `ref`: each summand's share."""
        return max(self.contributions[ref] - 1, 0)

    @property
    def tau_units(self) -> float:
        """tau in eps: the rerun's slices carry errors in roundings, so that float64's are not
        lost below its own resolution."""
        return self.tau / self.eps
    largest: float
    #: (function, output) -> (kind, term or -1, the site's slices)
    sites: dict[tuple[int, int], list[tuple[str, int, tuple[int, ...]]]]
    slices: int  # 1 + the sites' slices
    contributions: Counter  # gradient contributions summed into each value
    second_order_sites: int
    phases: int  # slices per site: 2 for a complex dtype (a real and an imaginary error)

    @classmethod
    def of(cls, spec: GraphSpec, dtype: torch.dtype) -> _Model:
        phases = 2 if dtype.is_complex else 1
        contributions = _contributions(spec)
        double = spec.backward == "double"
        sites: dict[tuple[int, int], list[tuple[str, int, tuple[int, ...]]]] = {}
        used, second = 1, 0
        for n, fn in enumerate(spec.functions):
            for k, out in enumerate(fn.outputs):
                passed_on = contributions[fn.args[out.slot].ref] if out.kind in ("input", "view") else 0
                for kind, t in _output_sites(out, double, passed_on):
                    sites.setdefault((n, k), []).append((kind, t, tuple(range(used, used + phases))))
                    used += phases
                    second += kind.startswith("second")
        return cls(spec, rounding_bound(dtype), library_roundings(dtype), underflow(dtype),
                   torch.finfo(dtype).max, sites, used, contributions, second, phases)


def _output_sites(out: OutputSpec, double: bool, passed_on: int) -> list[tuple[str, int]]:
    """(kind, term) of the sites of one output; passed_on: contributions to the value an
    input / view output passes its gradient on to (a single one adds nothing)."""
    if out.kind == "compute" and out.terms:
        found = [("value", -1)]
        if out.differentiable:  # (a listed output passes no gradient either)
            found += [("derivative", t) for t, term in enumerate(out.terms) if term.op in ("sin", "tanh")]
            found += [("product", t) for t in range(len(out.terms))]
            if double:
                found += [("second_g", t) for t in range(len(out.terms))]
                found += [("second_c", t) for t, term in enumerate(out.terms) if term.op != "linear"]
        return found
    if out.kind == "dirty":
        return [("value", -1), ("pass", -1)] + ([("second_g", -1)] if double else [])
    if out.kind in ("input", "view") and passed_on > 1:
        return [("pass", -1)]
    return []


def _contributions(spec: GraphSpec) -> Counter:
    """Gradient contributions summed into each value: a term or a passed-on output reading it,
    of an output that requires grad (the others send none), and the loss for such outputs."""
    requires_grad = Dataflow(spec).requires_grad
    found: Counter = Counter()
    for n, fn in enumerate(spec.functions):
        for k, out in enumerate(fn.outputs):
            if not (differentiable(fn, k) and requires_grad.get(f"f{n}.{k}", False)):
                continue
            if out.kind == "compute":
                found.update(fn.args[t.slot].ref for t in out.terms)
            else:
                found[fn.args[out.slot].ref] += 1
    found.update(r for r in spec.value_refs() if r.startswith("f") and requires_grad[r])
    return found


def _derivative(op: str, x: torch.Tensor) -> torch.Tensor:
    if op == "linear":
        return torch.ones_like(x)
    if op == "sin":
        return torch.cos(x)
    if op == "square":
        return 2 * x
    return 1 - torch.tanh(x) ** 2


def _second_derivative(op: str, x: torch.Tensor) -> torch.Tensor:
    if op == "sin":
        return -torch.sin(x)
    if op == "square":
        return torch.full_like(x, 2.0)
    t = torch.tanh(x)
    return -2 * t * (1 - t * t)


def _op(op: str, x: torch.Tensor) -> torch.Tensor:
    return {"linear": lambda: x, "sin": lambda: torch.sin(x), "square": lambda: x * x,
            "tanh": lambda: torch.tanh(x)}[op]()




# --- the rerun ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Slices:
    """Where one site's error goes: `select(q, value)` is value in slice q, zero in the others."""

    count: int
    ndim: int
    device: torch.device

    def select(self, q: int, value: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros(self.count, dtype=torch.bool, device=self.device)
        mask[q] = True
        return torch.where(mask.view(-1, *([1] * self.ndim)), value, torch.zeros((), dtype=value.dtype,
                                                                                     device=value.device))


def _zero_gradient(g: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(g)


def _value_of_nothing(g: torch.Tensor) -> torch.Tensor:
    """An exact zero that keeps g's graph: the first backward gets nothing from a second-backward
    site, the second backward differentiates through it."""
    return g - g.detach()


@dataclasses.dataclass(frozen=True)
class _Perturber:
    """Adds each site's error to the Function outputs of the rerun (see the module docstring),
    with plain autograd only (a custom Function would run through the very apply under test):
      value: a constant added to the output;
      derivative (f'(x) rounded): (v - v) w, an exact zero whose gradient and tangent are w,
        on v = x.view_as(x), a view of x of this term's own;
      product (the first backward's products and sums; the jvp's): a hook on v adds the error to
        the gradient it sees, the term's own g c f'(x), as a value (once, on the first backward);
        the jvp's by (v - v) w whose backward a hook cuts;
      second_g, second_c: exact zeros whose first derivative is an exact zero too, but whose
        second one is the error: along the gradient path ((v - v) w, a hook keeping no value of
        its gradient), along the curvature path (f(v) - f(v) - f'(v) (v - v), and (v - v)^2 / 2);
      pass: a hook on a view of the output adds the error of its sum to its gradient."""

    model: _Model
    slices: _Slices

    def function(self, n: int, read: list[Any]) -> tuple[Any, list[Any]]:
        """The Function spec the oracle computes with (every term on a slot of its own) and what
        it reads there: a view of its argument per term, for that term's sites."""
        fn = self.model.spec.functions[n]
        outputs, read = [], list(read)
        for out in fn.outputs:
            terms = []
            for term in out.terms:
                x = read[term.slot]
                read.append(self._sliced(x).view_as(self._sliced(x)) if isinstance(x, torch.Tensor) else x)
                terms.append(dataclasses.replace(term, slot=len(read) - 1))
            outputs.append(dataclasses.replace(out, terms=tuple(terms)))
        extra = tuple(fn.args[t.slot] for out in fn.outputs for t in out.terms)
        return dataclasses.replace(fn, args=fn.args + extra, outputs=tuple(outputs)), read

    def output(self, n: int, k: int, y: torch.Tensor, computed: Any, read: Sequence[Any]) -> torch.Tensor:
        """Function n's output k with its sites' errors; `computed`, `read`: from `function`."""
        fn = self.model.spec.functions[n]
        out, mine = fn.outputs[k], computed.outputs[k]
        errors: list[torch.Tensor] = []
        hooks: list[tuple[torch.Tensor, Callable]] = []
        passed = None
        for kind, t, where in self.model.sites.get((n, k), ()):
            term = out.terms[t] if t >= 0 else None
            ref = fn.args[out.slot if term is None else term.slot].ref
            for phase, q in zip((1, 1j), where):
                if kind == "value":
                    errors.append(self.slices.select(q, ETA * phase * self._value_error(out, y, read)))
                elif kind == "pass":
                    passed = passed if passed is not None else self._sliced(y).view_as(self._sliced(y))
                    errors += self._pass_errors(out, ref, passed, q, phase, hooks)
                else:
                    v = read[mine.terms[t].slot] if term is not None else self._sliced(y)
                    errors += self._term_errors(kind, term, out, ref, v, q, phase, hooks)
        for tensor, hook in hooks:
            if tensor.requires_grad:
                tensor.register_hook(hook)
        y = y if passed is None else passed
        if not errors:
            return y
        error = sum(errors[1:], errors[0])
        if out.mask >= 0:  # (an exact product: masks hold small integers)
            error = error * read[out.mask].to(error.dtype)
        return y + error

    def _sliced(self, x: torch.Tensor) -> torch.Tensor:
        """x with the slices' dimension: a value made from constants alone has none."""
        return x if x.dim() > self.slices.ndim else x.expand(self.slices.count, *x.shape)

    def _value_error(self, out: OutputSpec, y: torch.Tensor, read: Sequence[Any]) -> torch.Tensor:
        """E of a value site; infinite where an intermediate may overflow."""
        model = self.model
        if out.kind == "dirty":
            y = y.detach()
            magnitude = y.abs() * max(1.0, 1 / abs(out.coeff))
            return torch.where(magnitude > model.largest, torch.inf, y.abs() + model.tau_units)
        m = len(out.terms)
        total = torch.full_like(y.real, abs(out.bias))
        largest_term = torch.zeros_like(total)
        error = torch.full_like(total, m * abs(out.bias))
        for term in out.terms:
            value = _op(term.op, read[term.slot].detach()).abs()
            rounds = _FORWARD.get(term.op, model.library + 1) + m
            total = total + abs(term.coeff) * value
            largest_term = torch.maximum(largest_term, value)
            error = error + rounds * abs(term.coeff) * value + model.tau_units * rounds
        return torch.where(torch.maximum(total, largest_term) > model.largest, torch.inf, error)

    def _derivative_error(self, op: str, x: torch.Tensor) -> tuple[float, torch.Tensor | float]:
        """(relative roundings, absolute error in roundings) of f'(x) computed: cos rounds as a
        library call; 1 - tanh(x)^2 once, after squaring a rounded tanh: (2 library + 1) tanh^2."""
        if op == "sin":
            return self.model.library, 0.0
        if op == "tanh":
            return 1, (2 * self.model.library + 1) * torch.tanh(x) ** 2
        return 0, 0.0

    def _term_errors(self, kind: str, term: Any, out: OutputSpec, ref: str, v: torch.Tensor, q: int,
                     phase: complex, hooks: list) -> list[torch.Tensor]:
        """The exact zeros carrying a term site's error (and the hooks it needs)."""
        model, select = self.model, self.slices.select
        op, coeff = (term.op, term.coeff) if term is not None else ("linear", 1.0)
        held = v.detach()
        d = _derivative(op, held)
        zero = v - held
        if kind == "derivative":
            own, absolute = self._derivative_error(op, held)
            return [zero * select(q, ETA * phase * coeff * (own * d + torch.sgn(d) * absolute))]
        if kind == "product":
            sums = model.adds(ref)
            rounds = _PRODUCTS[op] + sums
            magnitude = max(sums + 1, 1) * torch.ones_like(held.real), (coeff * d).abs()
            hooks.append((v, self._first_backward(select(q, ETA * phase * rounds * torch.ones_like(held)),
                                                  rounds, magnitude, q)))
            jvp = zero * select(q, ETA * phase * coeff * (_PRODUCTS[op] + len(out.terms)) * d)
            if jvp.requires_grad:
                jvp.register_hook(_zero_gradient)
            return [jvp]
        rounds = 2 * _PRODUCTS[op] + model.contributions[ref] + 1
        if kind == "second_g":
            # a view of its own, whose hook keeps no value: only the second backward sees it
            g_path = v.view_as(v)
            hooks.append((g_path, _value_of_nothing))
            return [(g_path - held) * select(q, ETA * phase * rounds * coeff * d)]
        f2 = _second_derivative(op, held)
        if op == "tanh":  # f'' = -2 t (1 - t^2): t rounded as a library call, 1 - t^2 as in f'
            t = torch.tanh(held)
            own, absolute = model.library + 2, 2 * t.abs() * (2 * model.library + 1) * t * t
        else:
            own, absolute = {"sin": model.library}.get(op, 0), torch.zeros_like(f2)
        relative = select(q, ETA * phase * rounds * coeff * torch.ones_like(held))
        curvature = relative * (_op(op, v) - _op(op, held) - d * zero)
        value_error = select(q, ETA * phase * coeff * (own * f2 + torch.sgn(f2) * absolute))
        return [curvature + value_error * zero * zero / 2]

    def _first_backward(self, relative: torch.Tensor, rounds: float, magnitude: tuple, q: int) -> Callable:
        """A hook adding relative times the gradient it sees, plus the underflow of `rounds`
        roundings, as a value, on the first backward only (under double backward the second
        one has its own sites); infinite where an intermediate may overflow: the gradient times
        the sum's terms, or divided by |c f'| (g itself) times max(1, |c|, |f'|)."""
        model, where = self.model, self.slices.select(q, torch.ones((), dtype=torch.bool,
                                                                       device=self.slices.device))
        terms, factor = magnitude
        fired = [0]
        once = model.spec.backward == "double"

        def hook(g: torch.Tensor) -> torch.Tensor:
            fired[0] += 1
            if once and fired[0] > 1:
                return g
            held = g.detach()
            error = held * relative
            error = error + torch.sgn(error) * (ETA * model.tau_units * rounds)
            size = held.abs()
            g_itself = torch.where(factor > 0, size / factor.clamp_min(torch.finfo(factor.dtype).tiny), 0)
            overflow = ((size * terms > model.largest) | (g_itself * factor.clamp_min(1) * 2 > model.largest)) & where
            return g + torch.where(overflow, torch.full_like(error, torch.inf), error)
        return hook

    def _pass_errors(self, out: OutputSpec, ref: str, passed: torch.Tensor, q: int, phase: complex,
                     hooks: list) -> list[torch.Tensor]:
        """An input returned as is or a view passes g and the tangent on exactly, a dirty output
        times its coeff: the adds of the sum its gradient goes into, and the dirty product (in
        the gradient, and in the tangent by an exact zero whose backward a hook cuts)."""
        own = 1 if out.kind == "dirty" else 0
        sums = self.model.adds(ref)
        ones = torch.ones_like(passed.detach())
        hooks.append((passed, self._first_backward(self.slices.select(q, ETA * phase * (own + sums) * ones),
                                                   own + sums, ((sums + 1) * ones.real,
                                                                torch.full_like(ones.real, abs(out.coeff))), q)))
        if not own:
            return []
        jvp = (passed - passed.detach()) * self.slices.select(q, ETA * phase * own * ones)
        if jvp.requires_grad:
            jvp.register_hook(_zero_gradient)
        return [jvp]


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
        int64 / bool mask as float64 (generic._masked casts it to the dtype anyway)."""
        if t.dtype == torch.bool:
            t = t.to(torch.int64)
        t = self.inputs(t)
        return t.to(self.dtype if t.is_complex() else torch.float64)


def rerun_in_float64(real: BuiltGraph, spec: GraphSpec,
                     inputs: Callable[[torch.Tensor], torch.Tensor] = lambda t: t) -> RunResult:
    """Run `spec` (float64 or complex128, the structure of real.spec) by the math oracle on
    the real graph's leaves, loss weights and forward-AD tangents, each passed through `inputs`."""
    f64 = _Float64Graph(spec, oracle_functions(spec, real.device), real.device, real, inputs)
    return _rerun(f64, math_applier_for(spec))  # (reads clones of what is modified in place after the forward)


def _rerun(graph: BuiltGraph, apply: Applier) -> RunResult:
    result = run_graph(graph, apply, "float64", observers=())
    if result.status == "error":
        raise OracleError(f"the float64 rerun raised {result.describe_error()}") from result.error
    return result


@dataclasses.dataclass(frozen=True)
class _SlicedGraph(_Float64Graph):
    """The rerun with every input in `copies` slices, along a new dimension before the graph's
    shape (a leaf with views: (views, copies, *shape), so that its views are (copies, *shape)
    like every other value)."""

    copies: int = 1

    def make_leaves(self, generator_offset: int = 0) -> list[torch.Tensor]:
        return [self._copied(leaf.detach(), spec).requires_grad_(leaf.requires_grad)
                for leaf, spec in zip(super().make_leaves(generator_offset), self.spec.leaves)]

    def weights(self, count: int, offset: int = 1_000_003) -> list[torch.Tensor]:
        return [self._copied(w) for w in super().weights(count, offset)]

    def leaf_tangents(self, leaves: Sequence[torch.Tensor]) -> list[torch.Tensor | None]:
        return [None if t is None else self._copied(t, spec)
                for t, spec in zip(super().leaf_tangents(leaves), self.spec.leaves)]

    def _copied(self, t: torch.Tensor, leaf: LeafSpec | None = None) -> torch.Tensor:
        """t in every slice, on the graph's device: a CPU scalar leaf beside CUDA ones
        (LeafSpec.on_cpu) is no scalar once it has the slices' dimension."""
        dim = 1 if leaf is not None and leaf.views else 0
        t = t.unsqueeze(dim)
        return t.expand(*t.shape[:dim], self.copies, *t.shape[dim + 1:]).clone().to(self.device)


def _perturbed(real: BuiltGraph, model: _Model) -> dict[tuple[str, str], torch.Tensor | None]:
    """The slices (1 + sites, *role shape) of every (checkpoint, role) of the float64 rerun of
    `real` with each site's error in its own slice; None where the oracle has no tensor."""
    spec = real.spec
    wide = "complex128" if real.dtype.is_complex else "float64"
    # the same values: no trace, no checkpoint (a recomputed forward would apply the sites again)
    spec64 = dataclasses.replace(spec, dtype=wide, trace=False, checkpoint=False)
    graph = _SlicedGraph(spec64, oracle_functions(spec64, real.device), real.device, real, lambda t: t, model.slices)
    perturber = _Perturber(model, _Slices(model.slices, len(spec.shape), real.device))
    mutated = set(spec.mutated_outputs)
    ndim = len(spec.shape)

    def apply(n: int, cls: Any, args: Sequence[Any]) -> Any:
        fn = spec.functions[n]
        # computed outputs read clones of values modified after the forward (as math_applier_for), and a
        # tensor passed in a list detached (autograd does not see it: build.math_apply)
        read = [a[0].detach() if arg.listed else a.clone() if arg.ref in mutated else a
                for arg, a in zip(fn.args, args)]
        computed, read = perturber.function(n, read)
        out = math_apply(computed, args, cls.shape, cls.dtype, cls.device, read)
        outs = [o if not isinstance(o, torch.Tensor) else perturber.output(n, k, o, computed, read)
                for k, o in enumerate(fn.unpack_outputs(out))]
        return fn.pack_outputs(outs)

    found: dict[tuple[str, str], torch.Tensor | None] = {}
    for checkpoint, roles in _rerun(graph, apply).tensors.items():
        for role, t in roles.items():
            if t is None:
                found[checkpoint, role] = None
                continue
            if t.dim() == ndim:  # made from constants alone: the same in every slice
                t = t.expand(model.slices, *t.shape)
            # the slices' dimension: first, or second where a leaf with views leads with them
            dim = t.dim() - ndim - 1
            if dim not in (0, 1) or t.shape[dim] != model.slices:
                raise OracleError(f"the rerun's {checkpoint} {role} has shape {tuple(t.shape)}, "
                                  f"not ({model.slices}, *{spec.shape})")
            found[checkpoint, role] = t.movedim(dim, 0)
    return found


__all__ = ["COMPLEX_PRODUCT_FACTOR", "LIBRARY_ULPS", "OVERFLOW", "Tolerances", "UNCHECKED_SHARE",
           "error_bounds", "library_roundings", "rerun_in_float64", "rounding_bound", "unit_roundoff"]
