"""FunctionSpec.api "custom_op": a Function's math as a `torch.library.custom_op`.

The op takes the Function's tensor arguments (its constant arguments are part of the op,
which is made per Function spec) and returns its computed outputs; a thin Python wrapper,
`CustomOpFunction.apply`, takes the Function's arguments and returns its outputs with the
constant ones in place, as users wrap an op. Registered with it, from the formulas of
harness.generic, so both forms compute the same values:

  * the kernel: the generic forward (`generic.forward_values`, untraceable code included);
  * `register_fake`: the same ops without the untraceable code, on fake tensors, so the
    strides torch.compile sees are the kernel's;
  * `register_autograd`: setup_context and backward (`generic._setup`, `generic._backward`);
  * `register_vmap` where the spec has `vmap`: the op made for the batched shape runs the batch
    (every op is elementwise), as a user vmap staticmethod does (`harness.build.with_user_vmap`).

In the plain code style the same registrations are source text (harness.plain._OpWriter),
without register_vmap.

What cannot be a custom_op is `harness.spec.custom_op_limit` (each limit with its torch
source). Registering costs time and every op stays in torch's dispatcher, so the classes
and their ops are cached by (Function spec, index, shape, dtype, device): the paths of one
example, its reruns and shrinking reuse them; the least recently used are deregistered past
`OPS_KEPT`. `registrations()` counts the ops this process has registered.
"""

from __future__ import annotations

import collections
from typing import Any, Sequence

import torch
import torch._dynamo  # noqa: F401  (see below)
from torch.autograd.function import once_differentiable

from harness import generic, plain
from harness.spec import FunctionSpec, custom_op_name

# torch._dynamo is imported here, not by the first call of an op: an op's kernel is wrapped in
# torch._disable_dynamo (custom_ops.py, register_kernel), whose first call imports torch._dynamo,
# and that import leaves frames in a reference cycle that hold the call's arguments until gc
# runs; the lifetime oracle (gc off) would see the first op's inputs kept alive by it

#: ops kept registered; older ones are deregistered (a campaign makes new specs all night)
OPS_KEPT = 2048

_Key = tuple[FunctionSpec, int, tuple[int, ...], torch.dtype, torch.device]
_classes: collections.OrderedDict[_Key, type[CustomOpFunction]] = collections.OrderedDict()
_registered = 0


def registrations() -> int:
    """How many ops this process has registered so far (cache misses)."""
    return _registered


def clear() -> None:
    """Deregister every cached op (a selfeval fault that patches registration needs new ones)."""
    while _classes:
        _deregister(_classes.popitem(last=False)[1].op)


class CustomOpFunction:
    """What a graph applies for a custom_op Function: `apply` (the op's wrapper) and the
    attributes of a Function class that the math oracle, the runner and reproducers read
    (spec, index, shape, dtype, device). Not a torch.autograd.Function: torch's dispatcher
    applies the op, and its autograd is torch/_library/autograd.py's own Function."""

    is_custom_op = True
    spec: FunctionSpec
    index: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    #: the registered op (a torch._library.custom_ops.CustomOpDef)
    op: Any


def make_custom_op_function(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                            device: torch.device) -> type[CustomOpFunction]:
    """The class a graph applies for one custom_op Function, its op registered once (then cached)."""
    key = (spec, index, tuple(shape), dtype, device)
    if key in _classes:
        _classes.move_to_end(key)
        return _classes[key]
    cls = _plain_class(*key) if spec.code == "plain" else _generic_class(*key)
    _classes[key] = cls
    while len(_classes) > OPS_KEPT:
        _deregister(_classes.popitem(last=False)[1].op)
    return cls


def registered_op(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                  device: torch.device) -> Any:
    """The op of one custom_op Function (registered once, then cached)."""
    return make_custom_op_function(spec, index, shape, dtype, device).op


def _generic_class(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                   device: torch.device) -> type[CustomOpFunction]:
    op = _register(spec, index, shape, dtype, device)
    slots = spec.tensor_slots

    def apply(*args: Any) -> Any:
        outputs = _outputs(spec, op(*(args[s] for s in slots)))
        return tuple(outputs) if spec.tuple_output else outputs[0]

    body = {"spec": spec, "index": index, "shape": shape, "dtype": dtype, "device": device, "op": op,
            "apply": staticmethod(apply), "__module__": __name__}
    return type(f"F{index}", (CustomOpFunction,), body)


def _plain_class(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                 device: torch.device) -> type[CustomOpFunction]:
    """The class `F<index>` of plain.function_source, which registers its op as it is compiled (or
    the one a reproducer defined and handed over in plain.PLAIN_CLASSES: what the user reads
    is what runs), with the attributes the harness reads."""
    global _registered
    cls = plain.PLAIN_CLASSES.get(index)
    if cls is None:
        source = plain.function_source(spec, index, shape, dtype, device)
        cls = plain.compile_function(source, f"F{index}")
        cls.source = source
        _registered += 1
    for name, value in {"spec": spec, "index": index, "shape": shape, "dtype": dtype, "device": device,
                        "is_custom_op": True}.items():
        setattr(cls, name, value)
    return cls  # type: ignore[return-value]


def _outputs(spec: FunctionSpec, made: Any) -> list[Any]:
    """The Function's outputs, in order, from the op's (its computed outputs): constants in place."""
    computed = iter(made if isinstance(made, tuple) else (made,))
    return [next(computed) if o.kind == "compute" else o.value for o in spec.outputs]


def _computed_only(spec: FunctionSpec, values: Sequence[Any]) -> Any:
    """What the op returns: the computed outputs (a tuple unless there is one)."""
    computed = tuple(v for o, v in zip(spec.outputs, values) if o.kind == "compute")
    return computed if len(computed) != 1 else computed[0]


def _register(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
              device: torch.device) -> Any:
    global _registered
    slots = spec.tensor_slots
    n_computed = sum(1 for o in spec.outputs if o.kind == "compute")
    returns = "Tensor" if n_computed == 1 else f"({', '.join(['Tensor'] * n_computed)})"
    schema = f"({', '.join(f'Tensor a{s}' for s in slots)}) -> {returns}"
    # a class with the attributes generic's formulas read (its `index` names saved intermediates
    # for the lifetime oracle)
    attrs = type(f"F{index}Formulas", (), {
        "spec": spec, "index": index, "shape": shape, "dtype": dtype, "device": device})
    inner = (generic.make_generic_function(spec.inner(), index, shape, dtype, device, "Inner")
             if spec.nested else None)

    def arguments(tensors: Sequence[Any]) -> list[Any]:
        """The Function's arguments from the op's: constants in their slots."""
        args = [a.const for a in spec.args]
        for s, t in zip(slots, tensors):
            args[s] = t
        return args

    def per_argument(flags: Sequence[bool]) -> tuple[bool, ...]:
        """needs_input_grad per Function argument from the op's, one per tensor argument."""
        needs = [False] * len(spec.args)
        for s, flag in zip(slots, flags):
            needs[s] = bool(flag)
        return tuple(needs)

    def kernel(*tensors: torch.Tensor) -> Any:
        return _computed_only(spec, generic.forward_values(spec, index, shape, dtype, device, inner,
                                                         arguments(tensors)))

    def fake(*tensors: torch.Tensor) -> Any:
        # the kernel's ops on fake tensors, without its untraceable code (a print, a side
        # effect, a branch on a value, which fake tensors have not)
        return _computed_only(spec, generic._raw_outputs(spec, arguments(tensors), shape, dtype, device))

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        # torch/_library/autograd.py calls this inside its generated Function's forward, whose
        # ctx.needs_input_grad has one entry more than the op has arguments (its metadata
        # argument; backward strips it, setup_context does not): the op's own come first
        generic._setup(attrs, ctx, arguments(inputs), _outputs(spec, output),
                     needs_input_grad=per_argument(ctx.needs_input_grad[:len(slots)]))

    reads_saved_variables = spec.saved_read == "saved_variables"  # (as generic decides it: outside the trace)

    def backward(ctx: Any, *grads: Any) -> Any:
        # generic._backward reads needs_input_grad per Function argument; torch restores its own
        # tuple after this returns (autograd.py, backward's `finally`)
        ctx.needs_input_grad = per_argument(ctx.needs_input_grad)
        saved = ctx.saved_variables if reads_saved_variables else ctx.saved_tensors
        grads_by_argument = generic._backward(attrs, ctx, saved, *_grads_per_output(spec, grads))
        return tuple(grads_by_argument[s] for s in slots)

    if spec.once_differentiable:
        backward = once_differentiable(backward)
    op = torch.library.custom_op(custom_op_name(spec, index, shape, dtype, device), kernel, mutates_args=(),
                                 schema=schema)
    op.register_fake(fake)
    op.register_autograd(backward, setup_context=setup_context)
    if spec.vmap:
        def vmap_rule(info: Any, in_dims: tuple, *tensors: torch.Tensor) -> tuple[Any, Any]:
            batched = registered_op(spec, index, (info.batch_size, *shape), dtype, device)
            out = batched(*generic.batch_at(info, in_dims, tensors, 0))
            return out, tuple(0 for _ in out) if isinstance(out, tuple) else 0
        op.register_vmap(vmap_rule)
    _registered += 1
    return op


def _grads_per_output(spec: FunctionSpec, grads: Sequence[Any]) -> list[Any]:
    """The backward's gradients per Function output from the op's (one per computed output):
    None for a constant output, as an autograd.Function's backward gets it."""
    given = iter(grads)
    return [next(given) if o.kind == "compute" else None for o in spec.outputs]


def _deregister(op: Any) -> None:
    from torch._library import custom_ops

    op._lib._destroy()
    custom_ops.OPDEF_TO_LIB.pop(op._qualname, None)


__all__ = ["OPS_KEPT", "CustomOpFunction", "clear", "make_custom_op_function", "registered_op", "registrations"]
