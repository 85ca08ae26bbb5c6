"""Hypothesis strategies for graph specs (private; see strategies/__init__.py)."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from harness.spec import (
    BACKWARD_METHODS, BACKWARD_MODES, CODE_STYLES, DTYPES, ERROR_CASES, NEEDS_INPUT_GRAD_MODES, OPS, SAVE_KINDS, STYLES,
    UNTRACEABLE, UNUSED_GRAD_MODES, Arg, ConstTuple, FunctionSpec, GraphSpec, HookSpec, LeafSpec, OutputSpec, Term,
)

#: the inline capacity of torch's borrowed SmallVector<const Variable*, 24>
INLINE_CAPACITY = 24
# Exactly representable in every dtype, so coefficients never add rounding of their own.
COEFFS = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0)
SHAPES = st.one_of(
    st.sampled_from([(), (3,), (2, 3), (0,), (2, 0), (1,)]),
    st.lists(st.integers(0, 4), max_size=3).map(tuple),
)
CONSTS = st.one_of(
    st.none(), st.integers(-5, 5), st.sampled_from([0.5, -1.25, 3.0]),
    st.tuples(st.integers(0, 3), st.none()).map(ConstTuple),
)


def _check_bounds(name: str, lo: int, hi: int) -> None:
    if lo < 0:
        raise InvalidArgument(f"min_{name}={lo} must be >= 0")
    if lo > hi:
        raise InvalidArgument(f"min_{name}={lo} is greater than max_{name}={hi}")


def tensor_input_counts(*, min_inputs: int = 0, max_inputs: int = 30) -> st.SearchStrategy[int]:
    """Tensor inputs per Function: small counts, any count, and 23-26 (around the
    inline capacity of the borrowed input vector) deliberately often."""
    _check_bounds("inputs", min_inputs, max_inputs)
    edge = [n for n in range(INLINE_CAPACITY - 1, INLINE_CAPACITY + 3) if min_inputs <= n <= max_inputs]
    branches = [st.integers(min_inputs, min(max_inputs, min_inputs + 3)), st.integers(min_inputs, max_inputs)]
    if edge:
        branches.append(st.sampled_from(edge))
    return st.one_of(*branches)


def leaf_specs(*, ndim: int = 1) -> st.SearchStrategy[LeafSpec]:
    layouts = ["contiguous", "strided"] + (["transposed"] if ndim >= 2 else [])
    if ndim == 0:
        layouts = ["contiguous"]
    return st.builds(LeafSpec, requires_grad=st.booleans(), layout=st.sampled_from(layouts),
                     views=st.sampled_from([0, 0, 0, 2, 3]))


@st.composite
def _outputs(draw: st.DrawFn, tensor_slots: list[int], *, max_outputs: int) -> tuple[OutputSpec, ...]:
    kinds = ["compute", "const"] + (["input", "view", "dirty"] if tensor_slots else [])
    chosen = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=max_outputs))
    dirty: set[int] = set()
    outputs: list[OutputSpec | str] = []
    for kind in chosen:
        free = [s for s in tensor_slots if s not in dirty]
        if kind == "dirty" and free:
            slot = draw(st.sampled_from(free))
            dirty.add(slot)
            outputs.append(OutputSpec("dirty", slot=slot, coeff=draw(st.sampled_from(COEFFS))))
        else:
            outputs.append("compute" if kind == "dirty" else kind)
    readable = [s for s in tensor_slots if s not in dirty]
    done: list[OutputSpec] = []
    for out in outputs:
        if isinstance(out, OutputSpec):
            done.append(out)
        elif out == "const":
            done.append(OutputSpec("const", value=draw(st.sampled_from([0, 1, 7, "tag", None]))))
        elif out in ("input", "view") and readable:
            done.append(OutputSpec(out, slot=draw(st.sampled_from(readable))))
        else:
            terms = draw(st.lists(
                st.builds(Term, slot=st.sampled_from(readable), op=st.sampled_from(OPS),
                          coeff=st.sampled_from(COEFFS)),
                max_size=4)) if readable else []
            done.append(OutputSpec("compute", terms=tuple(terms), bias=draw(st.sampled_from([0.0, 0.5, -1.0])),
                                   non_differentiable=draw(st.booleans()) and draw(st.booleans())))
    return tuple(done)


@st.composite
def function_specs(draw: st.DrawFn, values: tuple[str, ...] = ("x0",), *, min_inputs: int = 0,
                   max_inputs: int = 30, max_outputs: int = 4, jvp: bool | None = None,
                   double_backward: bool = False, shape: tuple[int, ...] = (3,)) -> FunctionSpec:
    """One Function reading `values` (refs of tensors made earlier)."""
    _check_bounds("inputs", min_inputs, max_inputs)
    if max_outputs < 1:
        raise InvalidArgument(f"max_outputs={max_outputs} must be >= 1")
    if not values and min_inputs > 0:
        raise InvalidArgument(f"min_inputs={min_inputs} needs at least one value to read")
    n_tensors = draw(tensor_input_counts(min_inputs=min_inputs, max_inputs=max_inputs)) if values else 0
    refs = [draw(st.sampled_from(values)) for _ in range(n_tensors)]
    consts = draw(st.lists(CONSTS, max_size=3))
    kinds = draw(st.permutations(["t"] * len(refs) + ["c"] * len(consts)))
    refs_it, consts_it = iter(refs), iter(consts)
    args = [Arg(ref=next(refs_it)) if k == "t" else Arg(const=next(consts_it)) for k in kinds]
    tensor_slots = [i for i, a in enumerate(args) if a.ref is not None]
    outputs = draw(_outputs(tensor_slots, max_outputs=max_outputs))
    for out in outputs:
        if out.kind == "dirty":
            # torch allows a view input to be modified in place only by a Function with one output.
            # Only the first tensor input for now: any other gets wrong gradients in eager
            # (known_issues/eager_dirty_view_not_first_input.py, to be registered; then drop this)
            viewable = len(outputs) == 1 and out.slot == tensor_slots[0]
            args[out.slot] = Arg(ref=args[out.slot].ref, clone=True, view=viewable and draw(st.booleans()))
    style = draw(st.sampled_from(STYLES))
    save = set(draw(st.lists(st.sampled_from(SAVE_KINDS), max_size=3)))
    has_nonlinear = any(t.op != "linear" for o in outputs for t in o.terms)
    with_jvp = draw(st.booleans()) if jvp is None else jvp
    if style == "setup_context" and any(o.kind == "input" for o in outputs):
        # torch cannot save an input returned as-is under setup_context; make it a view
        # instead when the derivative needs saved inputs.
        if has_nonlinear and (double_backward or with_jvp):
            outputs = tuple(OutputSpec("view", slot=o.slot) if o.kind == "input" else o for o in outputs)
        else:
            save &= {"intermediates"}
            if has_nonlinear:
                save.add("intermediates")
    if style == "setup_context" and any(o.kind == "dirty" for o in outputs):
        save.discard("outputs")
    if has_nonlinear and (double_backward or not save & {"inputs", "intermediates"}):
        save.add("inputs")
    possible_errors = [e for e in ERROR_CASES if tensor_slots and (
        e != "grad_for_nontensor" or len(tensor_slots) < len(args)) and (
        e != "grad_shape" or any(d != 1 for d in shape))]
    error = draw(st.sampled_from([None] * 12 + possible_errors)) if possible_errors else None
    return FunctionSpec(
        args=tuple(args),
        outputs=outputs,
        tuple_output=True if len(outputs) > 1 else draw(st.booleans()),
        style=style,
        save=tuple(sorted(save)),
        materialize_grads=draw(st.booleans()),
        needs_input_grad=draw(st.sampled_from(NEEDS_INPUT_GRAD_MODES)),
        unused_grad=draw(st.sampled_from(UNUSED_GRAD_MODES)),
        once_differentiable=False if double_backward else draw(st.booleans()),
        jvp=with_jvp,
        vmap=style == "setup_context" and draw(st.booleans()),
        ctx_state=draw(st.booleans()),
        error=error,
        code=draw(st.sampled_from(CODE_STYLES)),  # about half plain: Dynamo sees both styles
        backward_method=draw(st.sampled_from(BACKWARD_METHODS)),
        nested=any(o.kind == "compute" for o in outputs) and draw(st.booleans()) and draw(st.booleans()),
        untraceable=draw(st.sampled_from(("none",) * 3 + tuple(  # mostly traceable
            u for u in UNTRACEABLE[1:] if tensor_slots or u != "data_branch"))),
    )


@st.composite
def graphs(draw: st.DrawFn, *, min_functions: int = 1, max_functions: int = 4, min_inputs: int = 0,
           max_inputs: int = 30, max_leaves: int = 4, dtypes: tuple[str, ...] = DTYPES,
           max_elements: int | None = None, mixed_device: bool = False) -> GraphSpec:
    """DAGs of custom Functions by construction: each Function reads leaves and the
    outputs of Functions drawn before it.

    mixed_device: for CUDA runs, graphs of shape () may keep leaves on the CPU (CPU scalar
    tensors beside CUDA ones; LeafSpec.on_cpu). Off by default, so CPU runs draw as before."""
    _check_bounds("functions", min_functions, max_functions)
    _check_bounds("inputs", min_inputs, max_inputs)
    if max_leaves < 1:
        raise InvalidArgument(f"max_leaves={max_leaves} must be >= 1")
    if not dtypes or not set(dtypes) <= set(DTYPES):
        raise InvalidArgument(f"dtypes={dtypes!r} must be a non-empty subset of {DTYPES}")
    if max_elements is not None and max_elements < 1:
        raise InvalidArgument(f"max_elements={max_elements} must be >= 1")
    shape = draw(SHAPES if max_elements is None else SHAPES.filter(lambda s: math.prod(s) <= max_elements))
    dtype = draw(st.sampled_from(dtypes))
    leaves = tuple(draw(st.lists(leaf_specs(ndim=len(shape)), min_size=1, max_size=max_leaves)))
    if mixed_device and shape == ():
        leaves = tuple(dataclasses.replace(leaf, on_cpu=draw(st.booleans())) if not leaf.views else leaf
                       for leaf in leaves)
    backward = draw(st.sampled_from(BACKWARD_MODES))
    forward_ad = draw(st.booleans())
    spec = GraphSpec(shape=shape, dtype=dtype, leaves=leaves)
    functions: list[FunctionSpec] = []
    for _ in range(draw(st.integers(min_functions, max_functions))):
        values = GraphSpec(shape=shape, dtype=dtype, leaves=leaves, functions=tuple(functions)).value_refs()
        functions.append(draw(function_specs(
            values, min_inputs=min_inputs, max_inputs=max_inputs, jvp=True if forward_ad else None,
            double_backward=backward == "double", shape=shape)))
    spec = GraphSpec(shape=shape, dtype=dtype, leaves=leaves, functions=tuple(functions))
    refs = spec.value_refs()
    whole_leaves = [f"x{i}" for i, leaf in enumerate(leaves) if not leaf.views]
    hook = st.one_of(
        st.builds(HookSpec, kind=st.sampled_from(["tensor", "retain_grad", "pre", "post"]),
                  target=st.sampled_from(refs)),
        st.just(HookSpec("saved_tensors")),
        *([st.builds(HookSpec, kind=st.just("post_accumulate"), target=st.sampled_from(whole_leaves))]
          if whole_leaves else []),
    )
    differentiable_leaves = [i for i, leaf in enumerate(leaves) if leaf.requires_grad]
    grad_leaves = () if backward == "none" or not differentiable_leaves else tuple(sorted(draw(
        st.lists(st.sampled_from(differentiable_leaves), unique=True, max_size=len(differentiable_leaves)))))
    hooks = tuple(draw(st.lists(hook, max_size=3)))
    traceable = not any(o.kind in ("dirty", "const") for fn in functions for o in fn.outputs)
    trace = traceable and draw(st.booleans()) and draw(st.booleans())
    mutated_outputs = draw(_mutated_outputs(functions, hooks))
    # not with double backward for now: compiled autograd loses second-order gradients through
    # checkpoint's saved-tensor hooks, as through ours (ca-unpack-hook-create-graph; its
    # trigger does not name checkpoint yet)
    checkpoint = (not trace and not mutated_outputs and backward != "double"
                  and draw(st.booleans()) and draw(st.booleans()))
    return GraphSpec(
        shape=shape, dtype=dtype, leaves=leaves, functions=tuple(functions), backward=backward,
        forward_ad=forward_ad, trace=trace, hooks=hooks, seed=draw(st.integers(0, 2**16)),
        grad_leaves=grad_leaves, mutated_outputs=mutated_outputs, checkpoint=checkpoint,
    )


@st.composite
def _mutated_outputs(draw: st.DrawFn, functions: list[FunctionSpec], hooks: tuple[HookSpec, ...]
                     ) -> tuple[str, ...]:
    """Computed outputs the user modifies in place after the forward (see GraphSpec)."""
    if any(fn.error for fn in functions) or any(h.kind == "saved_tensors" for h in hooks):
        return ()  # excluded by the spec's validation, with the reasons there
    aliased = {fn.args[o.slot].ref for fn in functions for o in fn.outputs if o.kind in ("input", "view")}
    candidates = [f"f{n}.{k}" for n, fn in enumerate(functions) for k, o in enumerate(fn.outputs)
                  if o.kind == "compute" and f"f{n}.{k}" not in aliased]
    if not candidates or not draw(st.booleans()):
        return ()
    return tuple(draw(st.lists(st.sampled_from(candidates), unique=True, min_size=1, max_size=2)))
