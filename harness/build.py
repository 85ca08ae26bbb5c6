"""Spec -> real `torch.autograd.Function` classes, input tensors, and the math oracle.

Each Function of a graph is made in its spec's form (`make_function`): the generic class body
(harness.generic), the plain source (harness.plain), a custom_op (harness.custom_op), with a
user vmap staticmethod where asked. `math_apply` evaluates the generic form's op sequence with
plain autograd (no custom Function), which is the independent oracle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from harness import custom_op, generic, plain
from harness.generic import GeneratedFunction, batch_at, make_generic_function
from harness.spec import FunctionSpec, GraphSpec

#: seed offsets of the deterministic loss weights, second-order loss weights and forward-AD
#: tangents: every path of one run draws the same ones (harness.run, harness.function_run)
LOSS_WEIGHTS = 1_000_003
SECOND_ORDER_WEIGHTS = 2_000_003
TANGENTS = 3_000_017

# --- the Function forms ----------------------------------------------------------------


def make_function(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                  device: torch.device) -> type[GeneratedFunction]:
    """One Function for one spec: a class in the spec's code style, with a user vmap
    staticmethod where its vmap_rule is "user"; for api "custom_op", the op's wrapper
    (harness.custom_op.CustomOpFunction), applied the same way."""
    if spec.api == "custom_op":
        return custom_op.make_custom_op_function(spec, index, shape, dtype, device)  # type: ignore[return-value]
    if spec.code == "plain":
        cls = make_plain_function(spec, index, shape, dtype, device)
    else:
        cls = make_generic_function(spec, index, shape, dtype, device)
    return with_user_vmap(cls) if spec.vmap_rule == "user" else cls


class UserVmapRuleLimit(RuntimeError):
    """Raised by with_user_vmap's rule where the batch cannot run without torch's limit on in-place
    views: the func paths report the run unsupported, with this reason."""


def with_user_vmap(cls: type[GeneratedFunction]) -> type[GeneratedFunction]:
    """`cls` with a user vmap staticmethod (FunctionSpec.vmap_rule "user", and the func.vmap.user
    path for every Function): every op is elementwise, so the batch is run by the same
    Function built for the batched shape, one class per batch size and batch dimension. The
    batch dimension is first, or where a batched input the Function modifies in place has it
    (GraphSpec.batch_dim): that input is passed as it is, since a view of it (movedim) would
    be an input modified in place that is a view, which torch allows only in a Function of one
    output (and there, where it is not the first input, routes its gradient wrongly: known issue
    eager-dirty-view-not-first-input)."""
    batched: dict[tuple[int, int], type[GeneratedFunction]] = {}
    dirty_slots = [o.slot for o in cls.spec.outputs if o.kind == "dirty"]

    def vmap(info: Any, in_dims: tuple, *args: Any) -> tuple[Any, Any]:
        dirty_dims = {in_dims[s] for s in dirty_slots if in_dims[s] is not None}
        if len(dirty_dims) > 1:
            raise UserVmapRuleLimit(
                "a user vmap rule gets inputs modified in place batched at different dims: it runs the batch with "
                "one of them a view, and torch refuses a Function that modifies a view input in place and returns "
                "more than one tensor (torch/csrc/autograd/custom_function.cpp)")
        dim = next(iter(dirty_dims), 0)
        if (info.batch_size, dim) not in batched:
            plain_spec = dataclasses.replace(cls.spec, vmap_rule="generate")  # it runs outside vmap
            shape = (*cls.shape[:dim], info.batch_size, *cls.shape[dim:])
            batched[info.batch_size, dim] = make_function(plain_spec, cls.index, shape, cls.dtype, cls.device)
        out = batched[info.batch_size, dim].apply(*batch_at(info, in_dims, args, dim))
        # (a listed output's out_dims are a list too: vmap matches out_dims to the output's structure)
        dims = cls.spec.pack_outputs([dim if isinstance(o, torch.Tensor) else None
                                      for o in cls.spec.unpack_outputs(out)])
        return out, dims

    return type(cls.__name__, (cls,), {"vmap": staticmethod(vmap), "generate_vmap_rule": False})


def make_plain_function(spec: FunctionSpec, index: int, shape: tuple[int, ...], dtype: torch.dtype,
                        device: torch.device) -> type[GeneratedFunction]:
    """The class compiled from `plain.function_source` (or the one in plain.PLAIN_CLASSES), with
    the attributes the math oracle and reproducers read from outside."""
    cls = plain.PLAIN_CLASSES.get(index)
    if cls is None:
        source = plain.function_source(spec, index, shape, dtype, device)
        cls = plain.compile_function(source, f"F{index}")
        cls.source = source
    for name, value in {"spec": spec, "index": index, "shape": shape, "dtype": dtype, "device": device}.items():
        setattr(cls, name, value)
    return cls  # type: ignore[return-value]


# --- the math oracle -------------------------------------------------------------------


def math_apply(spec: FunctionSpec, args: Sequence[Any], shape, dtype, device,
               read: Sequence[Any] | None = None) -> Any:
    """The same op sequence as the generated forward, by plain autograd.

    A custom Function's differentiable outputs require grad whenever any tensor input
    does; adding a zero computed from those inputs reproduces that, so hooks and
    autograd.grad see the same structure. Gradients through it are exact zeros.

    `read` (default: `args`): what the computed outputs read instead of the arguments.
    """
    # each tensor once: an argument read at many slots (the 23-26 band reads a few values over
    # and over) needs one zero, not one per slot
    # a tensor passed in a list (Arg.listed) is read, and autograd does not see it: no gradient or
    # tangent flows through it, and it does not make the outputs require grad
    args = [a[0].detach() if arg.listed else a for arg, a in zip(spec.args, args)]
    read = None if read is None else [a[0].detach() if isinstance(a, list) else a for a in read]
    grad_inputs = list({id(a): a for a in args if isinstance(a, torch.Tensor) and a.requires_grad}.values())
    anchor = None
    if grad_inputs and torch.is_grad_enabled():
        # The sum of an empty slice: exactly 0, with exactly-zero gradients and tangents even where
        # a value is not finite (0 * a.sum() would make nan of an inf). And no multiply by a number:
        # under forward AD that takes ~0.2-2 ms a call (the zero tangent goes through torch._refs).
        for a in grad_inputs:
            zero = a.unsqueeze(0)[:0].sum()  # (a view at any shape and layout; reshape may copy)
            anchor = zero if anchor is None else anchor + zero
    outputs: list[Any] = []
    raw = generic._raw_outputs(spec, args, shape, dtype, device, read, differentiated=True)
    for out, y in zip(spec.outputs, raw):
        if out.kind == "const":
            outputs.append(y)
        elif not out.differentiable:  # marked non-differentiable, or returned in a list: untracked
            outputs.append(y.detach())
        elif anchor is not None:
            outputs.append(y + anchor)
        else:
            outputs.append(y.view_as(y))  # a new tensor object, like a custom Function's output
    return spec.pack_outputs(outputs)


# --- graph inputs ------------------------------------------------------------------------


@dataclass(frozen=True)
class BuiltGraph:
    spec: GraphSpec
    functions: tuple[type[GeneratedFunction], ...]
    device: torch.device

    @property
    def dtype(self) -> torch.dtype:
        return getattr(torch, self.spec.dtype)

    def make_leaves(self, generator_offset: int = 0) -> list[torch.Tensor]:
        """Fresh leaf tensors; the same spec and seed give identical values."""
        gen = torch.Generator().manual_seed(self.spec.seed + generator_offset)
        leaves = []
        for leaf in self.spec.leaves:
            shape = ((leaf.views,) if leaf.views else ()) + tuple(self.spec.shape)
            device = torch.device("cpu") if leaf.on_cpu else self.device  # a CPU scalar beside CUDA ones
            dtype = self.dtype if leaf.dtype is None else getattr(torch, leaf.dtype)
            leaves.append(_leaf_tensor(shape, leaf.layout, leaf.requires_grad, dtype, device, gen))
        return leaves

    def weights(self, count: int, offset: int = LOSS_WEIGHTS) -> list[torch.Tensor]:
        """Deterministic loss weights, one per differentiable value."""
        gen = torch.Generator().manual_seed(self.spec.seed + offset)
        return [_uniform(tuple(self.spec.shape), self.dtype, gen).to(self.device) for _ in range(count)]

    def leaf_tangents(self, leaves: Sequence[torch.Tensor]) -> list[torch.Tensor | None]:
        """Deterministic forward-AD tangents, one per leaf of the graph's dtype; None for an int64 /
        bool leaf (LeafSpec.dtype), which forward AD cannot give one ("Expected primal to be
        floating point or complex")."""
        gen = torch.Generator().manual_seed(self.spec.seed + TANGENTS)
        return [None if spec.dtype is not None else
                (torch.rand(tuple(leaf.shape), dtype=leaf.dtype, generator=gen) * 2 - 1).to(leaf.device)
                for leaf, spec in zip(leaves, self.spec.leaves)]


def _uniform(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """Values in [-1, 1) (real and imaginary parts alike); a non-float leaf (a mask) holds
    integers in [-2, 2] or bools, so that multiplying by it is exact."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype == torch.int64:
        return torch.randint(-2, 3, shape, generator=gen)
    return torch.rand(shape, dtype=dtype, generator=gen) * 2 - 1


def _leaf_tensor(shape, layout: str, requires_grad: bool, dtype, device, gen) -> torch.Tensor:
    if layout == "transposed" and len(shape) >= 2:
        swapped = shape[:-2] + (shape[-1], shape[-2])
        t = _uniform(swapped, dtype, gen).to(device).transpose(-1, -2)
    elif layout == "strided" and len(shape) >= 1:
        wide = shape[:-1] + (2 * shape[-1],)
        t = _uniform(wide, dtype, gen).to(device)[..., ::2]
    else:
        t = _uniform(shape, dtype, gen).to(device)
    return t.detach().requires_grad_(requires_grad)


def build(spec: GraphSpec, device: str | torch.device = "cpu") -> BuiltGraph:
    generic.FORWARD_CALLS.clear()
    device = torch.device(device)
    dtype = getattr(torch, spec.dtype)
    functions = tuple(
        make_function(fn, n, tuple(spec.shape), dtype, device) for n, fn in enumerate(spec.functions)
    )
    return BuiltGraph(spec, functions, device)


@dataclass(frozen=True)
class OracleFunction:
    """What the math oracle reads of a Function (math_apply's arguments), for a graph that only
    the oracle applies (the float64 reruns of harness.oracles.bounds): no class, no code compiled."""

    spec: FunctionSpec
    index: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device


def oracle_functions(spec: GraphSpec, device: str | torch.device = "cpu") -> tuple[Any, ...]:
    """build(spec).functions for the math oracle alone (see OracleFunction)."""
    device = torch.device(device)
    dtype = getattr(torch, spec.dtype)
    return tuple(OracleFunction(fn, n, tuple(spec.shape), dtype, device) for n, fn in enumerate(spec.functions))


Applier = Callable[[int, type[GeneratedFunction], Sequence[Any]], Any]

__all__ = ["Applier", "BuiltGraph", "OracleFunction", "UserVmapRuleLimit", "build", "make_function",
           "make_plain_function", "math_apply", "oracle_functions", "with_user_vmap"]
