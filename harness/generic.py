"""The generic Function form: one class body for every FunctionSpec, its methods reading the
spec from class attributes, closures and module globals (harness.plain writes the same
Function out as source instead).

Forward, backward and jvp are all derived here from one `FunctionSpec`, so they are correct by
construction; harness.build.math_apply evaluates the same op sequence (`_raw_outputs`) with
plain autograd, the independent oracle. harness.custom_op registers these formulas with a
`torch.library.custom_op`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch.autograd.function import once_differentiable

from harness.spec import FunctionSpec, OutputSpec, parameter_name

#: where generic Functions report their saved intermediates: set by the runner while observers
#: watch it, which passes them on (harness.run.Observer.on_saved; plain Functions report none,
#: see harness/plain.py)
SAVED_OBSERVER: Callable[[int, list], None] | None = None

#: what generic Functions with untraceable="side_effect" append to at each forward (a Python
#: side effect at module level, as users write them); emptied at each build
FORWARD_CALLS: list[int] = []

# --- ops and their derivatives -------------------------------------------------------


def _op(name: str, x: torch.Tensor) -> torch.Tensor:
    if name == "linear":
        return x
    if name == "sin":
        return torch.sin(x)
    if name == "square":
        return x * x
    if name == "tanh":
        return torch.tanh(x)
    raise AssertionError(f"unknown op {name!r}")


def _derivative(name: str, x: torch.Tensor) -> torch.Tensor:
    """d op / dx at x (for the nonlinear ops; linear is the constant 1)."""
    if name == "sin":
        return torch.cos(x)
    if name == "square":
        return 2 * x
    if name == "tanh":
        return 1 - torch.tanh(x) ** 2
    raise AssertionError(f"no derivative tensor for op {name!r}")


def _computed(out: OutputSpec, args: Sequence[Any], shape, dtype, device, differentiated: bool = False
              ) -> torch.Tensor:
    """bias + sum of coeff * op(argument), term by term.

    differentiated: for the math oracle, whose ops autograd and forward AD differentiate. The
    values are the same bit for bit, from the Scalar overloads of mul and add: Python's `c * x`
    and `full + x` call the Tensor overloads, whose forward-AD formulas take the tangent-less
    constant for a ZeroTensor that torch handles in Python (torch._refs, ~0.1-0.2 ms a call
    where the Scalar overloads take ~3 us)."""
    y = None
    for t in out.terms:
        value = _op(t.op, args[t.slot])
        if not differentiated:
            term = t.coeff * value
        else:
            term = torch.ops.aten.mul.Scalar(value, t.coeff)
            if (y is None and term.shape[term.dim() - len(shape):] == shape and term.dtype == dtype
                    and term.device == device and term.is_contiguous()):
                # full(bias) + term, exactly (+ commutes), and contiguous as that sum is; full
                # broadcasts to the term's shape (harness.oracles.bounds' twin has a leading 2)
                y = torch.ops.aten.add.Scalar(term, out.bias)
                continue
        y = (torch.full(shape, out.bias, dtype=dtype, device=device) if y is None else y) + term
    if y is None:
        y = torch.full(shape, out.bias, dtype=dtype, device=device)
    return _masked(out, y, args)


def _masked(out: OutputSpec, y: torch.Tensor, args: Sequence[Any]) -> torch.Tensor:
    """y times the output's int64 / bool mask argument cast to y's dtype (OutputSpec.mask).
    Mask values are 0, 1 or small integers (make_leaves), so the product is exact: it adds
    no rounding to the error bounds."""
    return y if out.mask < 0 else y * args[out.mask].to(y.dtype)


def _raw_outputs(spec: FunctionSpec, args: Sequence[Any], shape, dtype, device,
                 read: Sequence[Any] | None = None, computed: Sequence[torch.Tensor] | None = None,
                 differentiated: bool = False) -> list[Any]:
    """The forward's values, in output order; dirty inputs are updated in place. Computed
    outputs read `read` (default: `args`), or are `computed` already (in output order).
    differentiated: the math oracle's ops (see _computed)."""
    read = args if read is None else read
    made = iter(computed) if computed is not None else None
    results: list[Any] = []
    for out in spec.outputs:
        if out.kind == "compute":
            results.append(next(made) if made is not None else
                           _computed(out, read, shape, dtype, device, differentiated))
        elif out.kind == "input":
            results.append(args[out.slot])
        elif out.kind == "view":
            results.append(args[out.slot].view_as(args[out.slot]))
        elif out.kind == "dirty":
            scale = torch.ops.aten.mul_.Scalar if differentiated else torch.Tensor.mul_
            scaled = scale(args[out.slot], out.coeff)
            results.append(args[out.slot] if spec.dirty_return == "input" else scaled)
        else:
            results.append(out.value)
    return results


# --- the generated Function ----------------------------------------------------------


class GeneratedFunction(torch.autograd.Function):
    """Base of every generic-style Function; `spec`, `index`, `shape`, `dtype`, `device` are
    set per class. A plain-style class (harness.plain) derives from torch.autograd.Function
    only and gets the same attributes once it is made; its methods never read them."""

    spec: FunctionSpec
    index: int  # position in the graph
    inner: type[GeneratedFunction] | None  # generic style: what a nested forward applies
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device


def _term_coeffs(spec: FunctionSpec) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(t.coeff for t in o.terms) for o in spec.outputs)


def _setup(cls: type[GeneratedFunction], ctx: Any, args: Sequence[Any], outputs: Sequence[Any],
           needs_input_grad: Sequence[bool] | None = None) -> None:
    """Everything a forward tells ctx, shared by old-style forward and setup_context (and a
    custom_op's setup_context, which passes `needs_input_grad` per argument: its ctx has
    one per tensor argument and one more, harness/custom_op.py)."""
    spec = cls.spec
    if not spec.materialize_grads:
        ctx.set_materialize_grads(False)
    dirty = [args[o.slot] for o in spec.outputs if o.kind == "dirty"]
    if dirty:
        ctx.mark_dirty(*dirty)
    nondiff = [outputs[k] for k, o in enumerate(spec.outputs) if o.non_differentiable]
    if nondiff:
        ctx.mark_non_differentiable(*nondiff)
    if spec.ctx_state:
        ctx.term_coeffs = _term_coeffs(spec)
    if spec.needs_input_grad == "saved":
        ctx.needs_input_grad_at_forward = tuple(ctx.needs_input_grad if needs_input_grad is None
                                                else needs_input_grad)
    nonlinear = [args[s] for s in spec.nonlinear_slots]
    masks = [args[s] for s in spec.mask_slots]
    saved: list[torch.Tensor] = list(masks)  # what the gradient of a masked output needs, always
    if "inputs" in spec.save:
        saved += nonlinear
    if "intermediates" in spec.save:
        intermediates = [_derivative(t.op, args[t.slot]) for o in spec.outputs for t in o.terms
                         if t.op != "linear"]
        if SAVED_OBSERVER is not None:
            SAVED_OBSERVER(cls.index, intermediates)
        saved += intermediates
    if "outputs" in spec.save:
        saved += [outputs[k] for k in spec.tensor_outputs]
    if saved:
        ctx.save_for_backward(*saved)
    if spec.jvp and masks + nonlinear:
        ctx.save_for_forward(*masks, *nonlinear)


def _unpack_saved(cls: type[GeneratedFunction], saved_tensors: Sequence[torch.Tensor]
                  ) -> tuple[dict[int, torch.Tensor], list[torch.Tensor]]:
    """(input by slot: masks and saved inputs, derivative tensors in term order) from what the
    backward read of ctx.saved_tensors (or of the alias the spec reads, ctx.saved_variables)."""
    spec = cls.spec
    saved = list(saved_tensors)
    by_slot: dict[int, torch.Tensor] = {}
    for s in spec.mask_slots:
        by_slot[s] = saved.pop(0)
    if "inputs" in spec.save:
        for s in spec.nonlinear_slots:
            by_slot[s] = saved.pop(0)
    derivs: list[torch.Tensor] = []
    if "intermediates" in spec.save:
        n = sum(1 for o in spec.outputs for t in o.terms if t.op != "linear")
        derivs, saved = saved[:n], saved[n:]
    if "outputs" in spec.save:
        for out in saved:  # saved outputs are unpacked (version checks) and sanity-checked
            if tuple(out.shape) != cls.shape:
                raise AssertionError(f"saved output has shape {tuple(out.shape)}, expected {cls.shape}")
    return by_slot, derivs


def _backward(cls: type[GeneratedFunction], ctx: Any, saved_tensors: Sequence[torch.Tensor], *grads: Any) -> Any:
    spec = cls.spec
    by_slot, derivs = _unpack_saved(cls, saved_tensors)
    coeffs = ctx.term_coeffs if spec.ctx_state else _term_coeffs(spec)
    needs = tuple(ctx.needs_input_grad)
    if spec.needs_input_grad == "saved" and needs != ctx.needs_input_grad_at_forward:
        raise AssertionError(
            f"needs_input_grad changed between forward {ctx.needs_input_grad_at_forward} and backward {needs}")
    acc: dict[int, torch.Tensor] = {}

    def add(slot: int, g: torch.Tensor) -> None:
        acc[slot] = g if slot not in acc else acc[slot] + g

    d = 0
    for k, out in enumerate(spec.outputs):
        g = grads[k]
        nonlinear_terms = [t for t in out.terms if t.op != "linear"]
        if g is None or not out.differentiable:
            d += len(nonlinear_terms) if out.kind == "compute" else 0
            continue
        if out.kind == "compute":
            g = _masked(out, g, by_slot)
            for t, c in zip(out.terms, coeffs[k]):
                if t.op == "linear":
                    add(t.slot, g * c)
                else:
                    deriv = by_slot.get(t.slot)
                    deriv = _derivative(t.op, deriv) if deriv is not None else derivs[d]
                    if deriv.is_complex():
                        # torch's convention: grad_input = grad_output * conj(f'(z)) for a
                        # holomorphic f (docs: Autograd for Complex Numbers)
                        deriv = deriv.conj()
                    d += 1
                    add(t.slot, g * c * deriv)
        elif out.kind in ("input", "view"):
            add(out.slot, g)
        elif out.kind == "dirty":
            add(out.slot, g * out.coeff)
    result: list[Any] = []
    masks = spec.mask_slots  # (a property that sorts: once, not per argument)
    for slot, arg in enumerate(spec.args):
        if not arg.is_tensor_input or slot in masks or (spec.needs_input_grad != "ignore" and not needs[slot]):
            result.append(None)  # a mask is an int64 / bool input, a list no tensor: no gradient
        elif slot in acc:
            result.append(acc[slot])
        else:
            result.append(torch.zeros(cls.shape, dtype=cls.dtype, device=cls.device)
                          if spec.unused_grad == "zeros" else None)
    return _break(cls, result)


def _break(cls: type[GeneratedFunction], result: list[Any]) -> Any:
    """Deliberate error cases: make the gradients wrong in the way the spec asks."""
    spec = cls.spec
    if spec.error == "grad_count":
        return tuple(result[:-1])
    if spec.error == "grad_shape":
        wrong = tuple(s + 1 if s != 1 else s for s in cls.shape)
        slot = spec.float_slots[0]
        result[slot] = torch.zeros(wrong, dtype=cls.dtype, device=cls.device)
    if spec.error == "grad_for_nontensor":
        slot = next(i for i, a in enumerate(spec.args) if a.ref is None)
        result[slot] = torch.zeros(cls.shape, dtype=cls.dtype, device=cls.device)
    return tuple(result)


def _jvp(cls: type[GeneratedFunction], ctx: Any, *tangents: Any) -> Any:
    spec = cls.spec
    slots = spec.mask_slots + spec.nonlinear_slots
    xs = dict(zip(slots, ctx.saved_tensors)) if slots else {}
    results: list[Any] = []
    for out in spec.outputs:
        if not out.differentiable:  # (a listed output's tangent too: torch tracks none)
            results.append(None)
        elif out.kind == "compute":
            t_out = torch.zeros(cls.shape, dtype=cls.dtype, device=cls.device)
            for t in out.terms:
                tx = tangents[t.slot]
                if tx is None:
                    continue
                t_out = t_out + t.coeff * (tx if t.op == "linear" else _derivative(t.op, xs[t.slot]) * tx)
            results.append(_masked(out, t_out, xs))
        elif out.kind in ("input", "view"):
            tx = tangents[out.slot]
            results.append(None if tx is None else tx.view_as(tx))  # torch requires a view here
        else:  # dirty: the tangent is updated in place, like the primal
            tx = tangents[out.slot]
            results.append(None if tx is None else tx.mul_(out.coeff))
    return tuple(results) if spec.tuple_output else results[0]


def forward_values(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                   device: torch.device, inner: Any, args: Sequence[Any]) -> list[Any]:
    """What a generic forward computes, in output order, with its untraceable code (the
    spec's `untraceable`) and its inner Function (`nested`; `inner` is its class)."""
    args = spec.unpack_args(args)  # (a tensor passed in a list, Arg.listed, read as itself)
    if spec.untraceable == "print":
        print(end="")  # prints nothing, and still breaks Dynamo's graph
    elif spec.untraceable == "side_effect":
        FORWARD_CALLS.append(index)
    elif spec.untraceable == "data_branch":
        total = args[spec.tensor_slots[0]].sum()
        if (total.real if total.is_complex() else total) > 0:  # Dynamo cannot know which arm runs
            branch = "positive"
        else:
            branch = "not positive"
        del branch  # both arms compute the same outputs
    computed = inner.apply(*args) if spec.nested else None
    return _raw_outputs(spec, args, shape, dtype, device, computed=computed)


def batch_at(info: Any, in_dims: Sequence[int | None], args: Sequence[Any], dim: int) -> list[Any]:
    """A vmap rule's arguments with the batch dimension at `dim`; an unbatched tensor is
    expanded to the batch (a clone: an in-place update of it must not write one element of
    memory for every sample). One batched at `dim` is passed as it is: even movedim(0, 0) is a
    view, and a Function that modifies a view in place may return only one tensor (torch:
    "If your Function modifies inplace an input that is a view of another Tensor, your
    Function cannot return more than one Tensor"), which grad(vmap) then raises."""
    def at_dim(a: Any, d: Any) -> Any:
        if isinstance(a, list):  # a tensor passed in a list (Arg.listed): in_dims follows the structure
            return [at_dim(a[0], d[0])]
        return (a if not isinstance(a, torch.Tensor) or d == dim
                else a.expand(info.batch_size, *a.shape).movedim(0, dim).clone() if d is None else a.movedim(d, dim))
    return [at_dim(a, d) for a, d in zip(args, in_dims)]


def _with_parameters(forward: Callable[..., Any], spec: FunctionSpec, ctx: bool) -> Callable[..., Any]:
    """`forward` itself (`*args`), or for a Function whose arguments are passed partly by keyword
    (spec.keyword_args) a forward with one named parameter per argument that calls it: keyword
    arguments need names to bind to (torch binds them by the forward's signature or code)."""
    if not spec.keyword_args:
        return forward
    names = (["ctx"] if ctx else []) + [parameter_name(i) for i in range(len(spec.args))]
    defaults = spec.parameter_defaults()  # (spec.keyword_default) read from the namespace
    parameters = names[:len(names) - len(spec.args)] + [
        f"{parameter_name(i)}=_default{i}" if i in defaults else parameter_name(i) for i in range(len(spec.args))]
    namespace: dict[str, Any] = {"_forward": forward, **{f"_default{i}": v for i, v in defaults.items()}}
    exec(f"def forward({', '.join(parameters)}):\n    return _forward({', '.join(names)})\n", namespace)
    return namespace["forward"]


def make_generic_function(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                          device: torch.device, suffix: str = "") -> type[GeneratedFunction]:
    """One class body for every spec: its methods read the spec from the class. The class
    is `F<index><suffix>`."""

    def run_forward(args: Sequence[Any]) -> list[Any]:
        return forward_values(spec, index, shape, dtype, device, inner, args)

    inner = make_generic_function(spec.inner(), index, shape, dtype, device, "Inner") if spec.nested else None

    # chosen here, not in the backward: Dynamo's trace of a backward under compiled autograd cannot
    # compare a string read from the class's spec ("Unresolved GetAttrVariable comparison")
    reads_saved_variables = spec.saved_read == "saved_variables"

    def backward(ctx: Any, *grads: Any) -> Any:
        return _backward(cls, ctx, ctx.saved_variables if reads_saved_variables else ctx.saved_tensors, *grads)

    if spec.once_differentiable:
        backward = once_differentiable(backward)
    body: dict[str, Any] = {"spec": spec, "index": index, "shape": shape, "dtype": dtype, "device": device,
                            "inner": inner,
                            spec.backward_method: staticmethod(backward), "__module__": __name__}
    if spec.style == "old":
        def forward_old(ctx: Any, *args: Any) -> Any:
            outputs = run_forward(args)
            _setup(cls, ctx, spec.unpack_args(args), outputs)
            return spec.pack_outputs(outputs)
        body["forward"] = staticmethod(_with_parameters(forward_old, spec, ctx=True))
    else:
        def forward_new(*args: Any) -> Any:
            return spec.pack_outputs(run_forward(args))

        def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
            _setup(cls, ctx, spec.unpack_args(inputs), spec.unpack_outputs(output))
        body["forward"] = staticmethod(_with_parameters(forward_new, spec, ctx=False))
        body["setup_context"] = staticmethod(setup_context)
        body["generate_vmap_rule"] = spec.vmap
    if spec.jvp:
        body["jvp"] = staticmethod(lambda ctx, *tangents: _jvp(cls, ctx, *tangents))
    if spec.clear_saved_tensors_on_access:  # (only then: torch reads it from the class, default False)
        body["clear_saved_tensors_on_access"] = True
    cls = type(f"F{index}{suffix}", (GeneratedFunction,), body)
    return cls


__all__ = ["FORWARD_CALLS", "SAVED_OBSERVER", "GeneratedFunction", "batch_at", "forward_values",
           "make_generic_function"]
