"""Hypothesis strategies for graph specs (private; see strategies/__init__.py)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import TypeVar

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from harness.spec import (
    BACKWARD_METHODS,
    BATCH_DIMS,
    BACKWARD_MODES,
    CODE_STYLES,
    COMPLEX_DTYPES,
    COMPLEX_OPS,
    DTYPES,
    ERROR_CASES,
    INPUT_DTYPES,
    NEEDS_INPUT_GRAD_MODES,
    OPS,
    SAVE_KINDS,
    STYLES,
    UNTRACEABLE,
    UNUSED_GRAD_MODES,
    Arg,
    ConstTuple,
    FunctionSpec,
    GraphSpec,
    HookSpec,
    LeafSpec,
    OutputSpec,
    Term,
    value_refs,
    as_custom_op,
    with_user_vmap_rule,
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

# Generation speed: a strategy built inside a composite is built and validated again at
# every draw (several ms per graph). So the strategies here are made once: at module level,
# or cached by the few sizes they depend on, drawing indexes into the example's own
# sequences. st.sampled_from(seq) and st.integers(0, len(seq) - 1) make the same choice
# (one integer in that range, below 128 here; none for one element), so the distribution of specs is unchanged.
T = TypeVar("T")
BOOLEANS = st.booleans()
COEFF_CHOICE = st.sampled_from(COEFFS)
CONST_LISTS = st.lists(CONSTS, max_size=3)
STYLE_CHOICE = st.sampled_from(STYLES)
#: torch.func refuses a graph with any old-style Function (harness/paths/func.py, OLD_STYLE), and
#: STYLE_CHOICE draws "old" (its first, simplest choice) for about 2 in 3 Functions: about 85% of
#: graphs have one. Drawn when a func path runs: setup_context first (what Hypothesis favours
#: and shrinks to) and 7 of 8 choices, so most graphs reach the transforms, and old-style ones
#: still come (the other paths keep the whole space).
STYLE_CHOICE_FAVOURING_SETUP_CONTEXT = st.sampled_from(("setup_context",) * 7 + ("old",))
#: and generate_vmap_rule for 3 in 4 of those Functions (the vmap paths, jacrev and jacfwd refuse a
#: Function without a vmap rule; func.vmap.user adds its own)
VMAP_CHOICE_FAVOURED = st.sampled_from((True, True, True, False))
#: and a jvp for 3 in 4 Functions of a graph without forward AD (func.jvp and func.jacfwd refuse a
#: graph with a Function without one; jacfwd also needs every vmap rule, so at 1 in 2 it checked
#: about 1 in 5 graphs)
JVP_CHOICE_FAVOURED = VMAP_CHOICE_FAVOURED
SAVE_LISTS = st.lists(st.sampled_from(SAVE_KINDS), max_size=3)
CONST_OUTPUTS = (0, 1, 7, "tag", None)
BIASES = (0.0, 0.5, -1.0)
SEEDS = st.integers(0, 2**16)
#: the default dtype distribution: float32 and float64 keep 4 shares each (2/3 of the graphs),
#: the float16, bfloat16, complex64 and complex128 graphs one each
DEFAULT_DTYPES = ("float32",) * 4 + ("float64",) * 4 + ("float16", "bfloat16", "complex64", "complex128")
#: int64 / bool leaves (read as masks) beside the float ones: in one graph of four
NON_FLOAT_LEAVES = ((), (), ()) + tuple((d,) for d in INPUT_DTYPES) + (INPUT_DTYPES,)
HOOK_KINDS = ("tensor", "retain_grad", "pre", "post")
#: the grad mode a Function is applied under: no_grad for 1 in 4 of the Functions that may have it (its
#: outputs then require no grad, so more would leave fewer Functions with a backward)
GRAD_MODE_CHOICES = ("enabled",) * 3 + ("no_grad",)
#: (traceable, out of) graphs under graphs(favour_dynamo=True): the rest keep one Function
#: drawn freely, so Dynamo's graph breaks and its eager fallback stay covered
TRACEABLE_SHARE = (5, 8)


@functools.cache
def _indexes(n: int) -> st.SearchStrategy[int]:
    # st.sampled_from of one element is st.just it: no choice is made
    return st.just(0) if n == 1 else st.integers(0, n - 1)


# A graph is ~150-200 choices, most of them single integers and booleans (an argument's value,
# a flag). draw(strategy) wraps each one in a span of Hypothesis' engine (~8 us); the choice
# itself, made on the ConjectureData that a composite's `draw` is bound to, is the same choice
# (st.integers(a, b) and st.sampled_from draw `draw_integer(a, b)`, st.booleans `draw_boolean()`)
# in half the time. Lists keep their strategies (their spans are what the shrinker deletes).
# Where `draw` is not bound to a ConjectureData with these methods, the strategies are drawn.
def _choices(draw: st.DrawFn):
    data = getattr(draw, "__self__", None)
    return data if hasattr(data, "draw_integer") and hasattr(data, "draw_boolean") else None


def _integer(draw: st.DrawFn, lo: int, hi: int) -> int:
    """draw(st.integers(lo, hi)) for a range of at most 128 (wider ones weight their ends)."""
    data = _choices(draw)
    return data.draw_integer(lo, hi) if data is not None else draw(st.integers(lo, hi))


def _flip(draw: st.DrawFn) -> bool:
    """draw(st.booleans())."""
    data = _choices(draw)
    return data.draw_boolean() if data is not None else draw(BOOLEANS)


def _pick(draw: st.DrawFn, seq: Sequence[T]) -> T:
    """draw(st.sampled_from(seq)), without building a strategy per draw."""
    if not seq:
        raise InvalidArgument("cannot pick from an empty sequence")
    return seq[0] if len(seq) == 1 else seq[_integer(draw, 0, len(seq) - 1)]


@functools.cache
def _unique_index_lists(n: int, min_size: int, max_size: int) -> st.SearchStrategy[list[int]]:
    """Unique sampled lists of indexes in range(n): the same choices as over any n elements."""
    return st.lists(st.sampled_from(range(n)), unique=True, min_size=min_size, max_size=max_size)


@functools.cache
def _output_kind_lists(with_tensors: bool, max_outputs: int) -> st.SearchStrategy[list[str]]:
    kinds = ["compute", "const"] + (["input", "view", "dirty"] if with_tensors else [])
    return st.lists(st.sampled_from(kinds), min_size=1, max_size=max_outputs)


@functools.cache
def _term_lists(readable: int, ops: tuple[str, ...] = OPS) -> st.SearchStrategy[list[tuple[int, str, float]]]:
    """(index into the readable slots, op, coeff), drawn in that order as st.builds(Term) did."""
    return st.lists(st.tuples(_indexes(readable), st.sampled_from(ops), COEFF_CHOICE), max_size=4)


@functools.cache
def _leaf_lists(ndim: int, max_leaves: int) -> st.SearchStrategy[list[LeafSpec]]:
    return st.lists(leaf_specs(ndim=ndim), min_size=1, max_size=max_leaves)


@functools.cache
def _hook_lists(refs: int, whole_leaves: int) -> st.SearchStrategy[list[tuple]]:
    """("target", kind, ref index) | ("saved",) | ("post_accumulate", whole leaf index): the
    branches, and the choices in each, of the hook strategy over refs and whole leaves."""
    hook = st.one_of(
        st.tuples(st.just("target"), st.sampled_from(HOOK_KINDS), _indexes(refs)),
        st.just(("saved",)),
        *([st.tuples(st.just("post_accumulate"), st.just("post_accumulate"), _indexes(whole_leaves))]
          if whole_leaves else []),
    )
    return st.lists(hook, max_size=3)


def _check_bounds(name: str, lo: int, hi: int) -> None:
    if lo < 0:
        raise InvalidArgument(f"min_{name}={lo} must be >= 0")
    if lo > hi:
        raise InvalidArgument(f"min_{name}={lo} is greater than max_{name}={hi}")


@functools.cache
def tensor_input_counts(*, min_inputs: int = 0, max_inputs: int = 30) -> st.SearchStrategy[int]:
    """Tensor inputs per Function: small counts, any count, and 23-26 (around the
    inline capacity of the borrowed input vector) deliberately often."""
    _check_bounds("inputs", min_inputs, max_inputs)
    edge = [n for n in range(INLINE_CAPACITY - 1, INLINE_CAPACITY + 3) if min_inputs <= n <= max_inputs]
    branches = [st.integers(min_inputs, min(max_inputs, min_inputs + 3)), st.integers(min_inputs, max_inputs)]
    if edge:
        branches.append(st.sampled_from(edge))
    return st.one_of(*branches)


@functools.cache
def leaf_specs(*, ndim: int = 1) -> st.SearchStrategy[LeafSpec]:
    layouts = ["contiguous", "strided"] + (["transposed"] if ndim >= 2 else [])
    if ndim == 0:
        layouts = ["contiguous"]
    return st.builds(LeafSpec, requires_grad=st.booleans(), layout=st.sampled_from(layouts),
                     views=st.sampled_from([0, 0, 0, 2, 3]))


def _outputs(draw: st.DrawFn, tensor_slots: list[int], *, max_outputs: int, ops: tuple[str, ...] = OPS
             ) -> tuple[OutputSpec, ...]:
    chosen = draw(_output_kind_lists(bool(tensor_slots), max_outputs))
    dirty: set[int] = set()
    outputs: list[OutputSpec | str] = []
    for kind in chosen:
        free = [s for s in tensor_slots if s not in dirty]
        if kind == "dirty" and free:
            slot = _pick(draw, free)
            dirty.add(slot)
            outputs.append(OutputSpec("dirty", slot=slot, coeff=_pick(draw, COEFFS)))
        else:
            outputs.append("compute" if kind == "dirty" else kind)
    readable = [s for s in tensor_slots if s not in dirty]
    done: list[OutputSpec] = []
    for out in outputs:
        if isinstance(out, OutputSpec):
            done.append(out)
        elif out == "const":
            done.append(OutputSpec("const", value=_pick(draw, CONST_OUTPUTS)))
        elif out in ("input", "view") and readable:
            done.append(OutputSpec(out, slot=_pick(draw, readable)))
        else:
            terms = [Term(readable[i], op, coeff) for i, op, coeff in draw(_term_lists(len(readable), ops))
                     ] if readable else []
            done.append(OutputSpec("compute", terms=tuple(terms), bias=_pick(draw, BIASES),
                                   non_differentiable=_flip(draw) and _flip(draw)))
    return tuple(done)


@st.composite
def function_specs(draw: st.DrawFn, values: tuple[str, ...] = ("x0",), *, min_inputs: int = 0,
                   max_inputs: int = 30, max_outputs: int = 4, jvp: bool | None = None,
                   double_backward: bool = False, shape: tuple[int, ...] = (3,), ops: tuple[str, ...] = OPS,
                   masks: tuple[str, ...] = ()) -> FunctionSpec:
    """One Function reading `values` (refs of tensors made earlier), its terms using `ops`,
    and maybe one of `masks` (refs of int64 / bool leaves) as a mask of computed outputs."""
    return _function_spec(draw, values, min_inputs=min_inputs, max_inputs=max_inputs, max_outputs=max_outputs,
                          jvp=jvp, double_backward=double_backward, shape=shape, ops=ops, masks=masks)


def _function_spec(draw: st.DrawFn, values: Sequence[str], *, min_inputs: int, max_inputs: int,
                   max_outputs: int, jvp: bool | None, double_backward: bool, shape: tuple[int, ...],
                   ops: tuple[str, ...] = OPS, masks: Sequence[str] = (),
                   style_choice: st.SearchStrategy[str] = STYLE_CHOICE,
                   vmap_choice: st.SearchStrategy[bool] = BOOLEANS,
                   jvp_choice: st.SearchStrategy[bool] = BOOLEANS) -> FunctionSpec:
    """function_specs' body, called directly by graphs() (a composite is a new strategy per call)."""
    _check_bounds("inputs", min_inputs, max_inputs)
    if max_outputs < 1:
        raise InvalidArgument(f"max_outputs={max_outputs} must be >= 1")
    if not values and min_inputs > 0:
        raise InvalidArgument(f"min_inputs={min_inputs} needs at least one value to read")
    n_tensors = draw(tensor_input_counts(min_inputs=min_inputs, max_inputs=max_inputs)) if values else 0
    refs = [_pick(draw, values) for _ in range(n_tensors)]
    consts = draw(CONST_LISTS)
    # where the constants go among the arguments: a uniform choice of positions, as a shuffle of
    # the tensors and constants gives, in as many choices as there are constants (a shuffle took
    # one per argument, even with no constant to place)
    at = set(draw(_unique_index_lists(len(refs) + len(consts), len(consts), len(consts)))) if consts else set()
    kinds = ["c" if i in at else "t" for i in range(len(refs) + len(consts))]
    refs_it, consts_it = iter(refs), iter(consts)
    args = [Arg(ref=next(refs_it)) if k == "t" else Arg(const=next(consts_it)) for k in kinds]
    tensor_slots = [i for i, a in enumerate(args) if a.ref is not None]
    outputs = _outputs(draw, tensor_slots, max_outputs=max_outputs, ops=ops)
    for out in outputs:
        if out.kind == "dirty":
            # torch allows a view input to be modified in place only by a Function with one output
            # (at any tensor slot: a view not at the first one hits eager-dirty-view-not-first-input)
            viewable = len(outputs) == 1
            args[out.slot] = Arg(ref=args[out.slot].ref, clone=True, view=viewable and _flip(draw))
    style = draw(style_choice)
    save = set(draw(SAVE_LISTS))
    has_nonlinear = any(t.op != "linear" for o in outputs for t in o.terms)
    with_jvp = draw(jvp_choice) if jvp is None else jvp
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
    error = _pick(draw, [None] * 12 + possible_errors) if possible_errors else None
    computed = [k for k, o in enumerate(outputs) if o.kind == "compute"]
    if masks and computed and _flip(draw):
        # one more argument, last: an int64 / bool leaf that masks some of the computed outputs
        args.append(Arg(ref=_pick(draw, masks)))
        masked = [k for k in computed if _flip(draw)] or computed[:1]
        outputs = tuple(dataclasses.replace(o, mask=len(args) - 1) if k in masked else o
                        for k, o in enumerate(outputs))
    fn = FunctionSpec(
        args=tuple(args),
        outputs=outputs,
        tuple_output=True if len(outputs) > 1 else _flip(draw),
        style=style,
        save=tuple(sorted(save)),
        materialize_grads=_flip(draw),
        needs_input_grad=_pick(draw, NEEDS_INPUT_GRAD_MODES),
        unused_grad=_pick(draw, UNUSED_GRAD_MODES),
        once_differentiable=False if double_backward else _flip(draw),
        jvp=with_jvp,
        vmap=style == "setup_context" and draw(vmap_choice),
        ctx_state=_flip(draw),
        error=error,
        code=_pick(draw, CODE_STYLES),  # about half plain: Dynamo sees both styles
        backward_method=_pick(draw, BACKWARD_METHODS),
        nested=any(o.kind == "compute" for o in outputs) and _flip(draw) and _flip(draw),
        untraceable=_pick(draw, ("none",) * 3 + tuple(  # mostly traceable
            u for u in UNTRACEABLE[1:] if tensor_slots or u != "data_branch")),
        # (drawn last: the choices before keep their meaning)
        # 1 in 8: the native paths (owned, borrowed) call it unsupported (their C++ apply refuses it),
        # and at 1 in 4 they lost 33 of 145 examples to it
        clear_saved_tensors_on_access=_flip(draw) and _flip(draw) and _flip(draw),
        grad_mode=_pick(draw, GRAD_MODE_CHOICES) if all(o.kind in ("compute", "const") for o in outputs)
        else "enabled",  # (spec.validate: no aliases under no_grad)
    )
    # (drawn last too) the other ways of writing the same Function (harness/custom_op.py,
    # build.with_user_vmap): half of those that can be one (about 5% of the Functions drawn: computed
    # outputs only, no jvp, ...) is a torch.library.custom_op, 1 in 4 of the others with a vmap rule
    # has a hand-written one. The twin-form oracle flips them too
    op = as_custom_op(fn)
    if op is not None:
        fn = op if _flip(draw) else fn
    else:
        user = with_user_vmap_rule(fn)
        fn = user if user is not None and _integer(draw, 1, 4) == 4 else fn
    # (drawn last of all) for 1 in 4 setup_context-style Functions, the last arguments passed to
    # apply by keyword (spec.FunctionSpec.keyword_args: bound by torch's Python apply and by Dynamo's own code)
    if fn.api == "function" and fn.style == "setup_context" and fn.args and _integer(draw, 1, 4) == 4:
        fn = dataclasses.replace(fn, keyword_args=_integer(draw, 1, len(fn.args)))
        # and where the first of them is a constant, for half of those it is left to the forward's default
        if fn.args[len(fn.args) - fn.keyword_args].ref is None and _flip(draw):
            fn = dataclasses.replace(fn, keyword_default=True)
    return fn


@st.composite
def graphs(draw: st.DrawFn, *, min_functions: int = 1, max_functions: int = 4, min_inputs: int = 0,
           max_inputs: int = 30, max_leaves: int = 4, dtypes: tuple[str, ...] | None = None,
           max_elements: int | None = None, mixed_device: bool = False,
           favour_torch_func: bool = False, favour_dynamo: bool = False) -> GraphSpec:
    """DAGs of custom Functions by construction: each Function reads leaves and the
    outputs of Functions drawn before it.

    dtypes: the graph dtypes to draw from, uniformly; None: DEFAULT_DTYPES (mostly float32
    and float64). Beside the max_leaves float leaves a graph may have int64 / bool leaves,
    which Functions read as masks (OutputSpec.mask).

    mixed_device: for CUDA runs, graphs of shape () may keep leaves on the CPU (CPU scalar
    tensors beside CUDA ones; LeafSpec.on_cpu). Off by default, so CPU runs draw as before.
    favour_torch_func: for campaigns that run torch.func paths, which refuse old-style
    Functions (and, for vmap, Functions without a vmap rule; for jvp and jacfwd, without a jvp):
    7 in 8 Functions in setup_context style, 3 in 4 of them with generate_vmap_rule, 3 in 4 with
    a jvp; old style, no rule and no jvp stay reachable; and in about 1 graph in 2, leaves the
    batched transforms share across the batch (GraphSpec.batch_shared, drawn last), and in
    1 graph in 2 the batched leaves' batch dimension last (vmap's in_dims=-1: GraphSpec.batch_dim, drawn
    after everything else). Off by default, so other runs draw as before.
    favour_dynamo: for campaigns that run torch.compile (see _traceable): TRACEABLE_SHARE of the
    graphs have every Function written so that Dynamo traces it, the others every Function but
    one; forward AD (which needs a jvp in every Function, and Dynamo traces none with a jvp)
    in 1 of 8 of the others; the straight-line forward but for about 1 graph in 8; and in about 1 graph in 2
    with a first-order backward, that backward under compiled autograd (GraphSpec.compiled_backward, drawn
    last). Off by default.

    Last of all, in every campaign (not with `trace`): in 1 graph in 2 with a candidate, a computed output
    returned inside a one-element list (OutputSpec.listed), then in 1 in 2 with a candidate a tensor
    argument passed inside one (Arg.listed; for half of those, every candidate of its Function)."""
    _check_bounds("functions", min_functions, max_functions)
    _check_bounds("inputs", min_inputs, max_inputs)
    if max_leaves < 1:
        raise InvalidArgument(f"max_leaves={max_leaves} must be >= 1")
    if dtypes is not None and (not dtypes or not set(dtypes) <= set(DTYPES)):
        raise InvalidArgument(f"dtypes={dtypes!r} must be a non-empty subset of {DTYPES}")
    if max_elements is not None and max_elements < 1:
        raise InvalidArgument(f"max_elements={max_elements} must be >= 1")
    shape = draw(SHAPES if max_elements is None else SHAPES.filter(lambda s: math.prod(s) <= max_elements))
    dtype = _pick(draw, DEFAULT_DTYPES if dtypes is None else dtypes)
    ops = COMPLEX_OPS if dtype in COMPLEX_DTYPES else OPS
    leaves = tuple(draw(_leaf_lists(len(shape), max_leaves)))
    leaves += tuple(LeafSpec(requires_grad=False, dtype=d) for d in _pick(draw, NON_FLOAT_LEAVES))
    masks = tuple(f"x{i}" for i, leaf in enumerate(leaves) if leaf.dtype is not None)
    if mixed_device and shape == ():
        leaves = tuple(dataclasses.replace(leaf, on_cpu=_flip(draw)) if not leaf.views else leaf
                       for leaf in leaves)
    traceable = favour_dynamo and _integer(draw, 1, TRACEABLE_SHARE[1]) <= TRACEABLE_SHARE[0]
    if traceable and not any(leaf.requires_grad for leaf in leaves):
        # (a graph that nothing requires grad in is inlined by Dynamo: no Function is traced)
        leaves = (dataclasses.replace(leaves[0], requires_grad=True),) + leaves[1:]
    backward = _pick(draw, BACKWARD_MODES)
    forward_ad = not traceable and _flip(draw) and (not favour_dynamo or (_flip(draw) and _flip(draw)))
    functions: list[FunctionSpec] = []
    # (value_refs without a GraphSpec: each one is validated, a fifth of a millisecond)
    for _ in range(_integer(draw, min_functions, max_functions)):
        values = [r for r in value_refs(leaves, functions) if r not in masks]
        functions.append(_function_spec(
            draw, values, min_inputs=min_inputs, max_inputs=max_inputs, max_outputs=4,
            jvp=True if forward_ad else None, double_backward=backward == "double", shape=shape,
            ops=ops, masks=masks,
            style_choice=STYLE_CHOICE_FAVOURING_SETUP_CONTEXT if favour_torch_func else STYLE_CHOICE,
            vmap_choice=VMAP_CHOICE_FAVOURED if favour_torch_func else BOOLEANS,
            jvp_choice=JVP_CHOICE_FAVOURED if favour_torch_func else BOOLEANS))
    if backward in ("retain", "double"):  # a second backward would read the saved tensors again (spec.validate)
        functions = [dataclasses.replace(fn, clear_saved_tensors_on_access=False) for fn in functions]
    if favour_dynamo:
        untraced = -1 if traceable else _integer(draw, 0, len(functions) - 1) if functions else -1
        functions = [fn if n == untraced else _traceable(
            fn, forward_ad, masks, [r for r in value_refs(leaves, functions[:n]) if r not in masks])
            for n, fn in enumerate(functions)]
    refs = [r for r in value_refs(leaves, functions) if r not in masks]  # hooks go on float values
    whole_leaves = [f"x{i}" for i, leaf in enumerate(leaves) if not leaf.views and leaf.dtype is None]
    differentiable_leaves = [i for i, leaf in enumerate(leaves) if leaf.requires_grad]
    n = len(differentiable_leaves)
    grad_leaves = () if backward == "none" or not differentiable_leaves else tuple(sorted(
        differentiable_leaves[i] for i in draw(_unique_index_lists(n, 0, n))))
    hooks = tuple(HookSpec("saved_tensors") if h[0] == "saved" else
                  HookSpec(h[1], target=refs[h[2]] if h[0] == "target" else whole_leaves[h[2]])
                  for h in draw(_hook_lists(len(refs), len(whole_leaves))))
    traceable = not any(o.kind in ("dirty", "const") for fn in functions for o in fn.outputs) and not any(
        fn.grad_mode == "no_grad" for fn in functions)
    trace = traceable and _flip(draw) and _flip(draw)
    mutated_outputs = _mutated_outputs(draw, functions, hooks)
    checkpoint = not trace and not mutated_outputs and _flip(draw) and _flip(draw)
    # the interpreter loop for about 1 graph in 8 drawn (its own Dynamo bugs stay covered)
    loop = not favour_dynamo or _integer(draw, 1, 8) == 8
    seed = draw(SEEDS)
    # drawn last (a sequence saved before it still decodes to the same graph up to here): for
    # torch.func campaigns, in about 1 graph in 2, leaves vmap shares across the batch
    batch_shared: tuple[int, ...] = ()
    if favour_torch_func:
        # (vmap needs one batched input: one leaf is never shared)
        if len(leaves) > 1 and _flip(draw):
            batch_shared = tuple(sorted(draw(_unique_index_lists(len(leaves), 1, len(leaves) - 1))))
    # drawn last too: for torch.compile campaigns, in about 1 graph in 2 with a first-order backward
    # (AOT refuses double backward), compiled autograd captures the backward of the compiled region
    compiled_backward = favour_dynamo and backward in ("backward", "grad", "retain") and _flip(draw)
    # and for torch.func campaigns, in 1 graph in 2, the batched leaves' batch dimension last (vmap's in_dims)
    batch_dim = _pick(draw, BATCH_DIMS) if favour_torch_func else 0
    # last of all: in 1 graph in 2 that has one to choose, a computed output returned in a list
    # (OutputSpec.listed; a traced Function returns tensors only)
    if not trace:
        functions = _listed_outputs(draw, functions, hooks, mutated_outputs)
        # and after it, in 1 graph in 2 that has one to choose, a tensor argument passed in a list (Arg.listed)
        functions = _listed_arguments(draw, functions, hooks, mutated_outputs)
    return GraphSpec(
        shape=shape, dtype=dtype, leaves=leaves, functions=tuple(functions), backward=backward,
        forward_ad=forward_ad, trace=trace, hooks=hooks, seed=seed,
        grad_leaves=grad_leaves, mutated_outputs=mutated_outputs, checkpoint=checkpoint,
        forward_code="loop" if loop else "straight", batch_shared=batch_shared,
        compiled_backward=compiled_backward, batch_dim=batch_dim,
    )


def _traceable(fn: FunctionSpec, forward_ad: bool, masks: Sequence[str], values: Sequence[str]) -> FunctionSpec:
    """`fn` written so that Dynamo traces it into its autograd_function_apply op instead of
    falling back to eager: plain code (the generic style's class attributes and *args forward
    are registered Dynamo bugs), no jvp ("Unsupported custom jvp") unless the graph runs forward
    AD, `backward` rather than `vjp`, no untraceable forward code, a dirty input returned as
    itself (spec.DIRTY_RETURNS), and distinct tensors: an argument that repeats an earlier one
    reads a value of `values` (those the Function may read; earlier Functions' outputs first) that it
    does not read yet, or, when
    it reads them all, a fresh clone. (Another value rather than a clone where there is one: equal
    values in two slots would hide a path that mixes the slots up.) Every other axis is kept."""
    seen: set[str] = set()
    # earlier Functions' outputs first: a traced Function fed by another is where Dynamo hands one
    # op's outputs to the next (the ctx of the second sees them as its inputs)
    unread = sorted((r for r in values if r not in {a.ref for a in fn.args}), key=lambda r: not r.startswith("f"))
    args = []
    for arg in fn.args:
        if arg.ref is not None and arg.ref in seen and not arg.clone and arg.ref not in masks:
            arg = dataclasses.replace(arg, ref=unread.pop(0)) if unread else dataclasses.replace(arg, clone=True)
        seen.add(arg.ref)
        args.append(arg)
    if fn.api == "custom_op":  # Dynamo traces an op as one node whatever its code style (and has no jvp)
        return dataclasses.replace(fn, args=tuple(args))
    # (a hand-written vmap rule needs the generic code style: plain.py writes none)
    return dataclasses.replace(fn, args=tuple(args), code="plain", jvp=fn.jvp and forward_ad,
                               backward_method="backward", untraceable="none", dirty_return="input",
                               vmap_rule="generate")


def _listed_outputs(draw: st.DrawFn, functions: list[FunctionSpec], hooks: tuple[HookSpec, ...],
                    mutated_outputs: tuple[str, ...]) -> list[FunctionSpec]:
    """`functions` with, in 1 graph in 2 that has a candidate, one computed output returned inside a
    one-element list (OutputSpec.listed), which autograd does not track. Candidates: computed outputs
    of autograd.Function classes (a custom_op cannot return one, spec.custom_op_limit) not marked
    non-differentiable, not modified in place after the forward, and with no hook on them or on a
    value computed from them (torch refuses a hook on a tensor that does not require grad)."""
    hooked = {h.target for h in hooks if h.target is not None}
    candidates = []
    for n, fn in enumerate(functions):
        if fn.api != "function":
            continue
        for k, o in enumerate(fn.outputs):
            ref = f"f{n}.{k}"
            if o.kind == "compute" and not o.non_differentiable and ref not in mutated_outputs \
                    and not _downstream(functions, ref) & hooked:
                candidates.append((n, k))
    if not candidates or not _flip(draw):
        return functions
    n, k = candidates[_integer(draw, 0, len(candidates) - 1)]
    outputs = list(functions[n].outputs)
    outputs[k] = dataclasses.replace(outputs[k], listed=True)
    return [*functions[:n], dataclasses.replace(functions[n], outputs=tuple(outputs)), *functions[n + 1:]]


def _listed_arguments(draw: st.DrawFn, functions: list[FunctionSpec], hooks: tuple[HookSpec, ...],
                      mutated_outputs: tuple[str, ...]) -> list[FunctionSpec]:
    """`functions` with, in 1 graph in 2 that has a candidate, one tensor argument passed inside a
    one-element list (Arg.listed), which autograd does not see, or every candidate of its Function.
    Candidates: uncloned tensor arguments of autograd.Function classes read by computed outputs only
    (not a mask, not returned as-is, as a view or modified in place; not the one float input a
    deliberate error needs), not an output the user modifies in place after the forward, of a Function
    with no hook on its outputs or on a value computed from them (the outputs may no longer require
    grad, and torch refuses a hook on a tensor that does not)."""
    hooked = {h.target for h in hooks if h.target is not None}
    candidates = []
    for n, fn in enumerate(functions):
        if fn.api != "function" or any(_downstream(functions, f"f{n}.{k}") & hooked for k in fn.tensor_outputs):
            continue
        kept = {o.slot for o in fn.outputs if o.kind != "compute"} | set(fn.mask_slots)
        if fn.error is not None:
            kept.add(fn.float_slots[0])  # a deliberate error case needs a float tensor input (spec.validate)
        candidates += [(n, s) for s, a in enumerate(fn.args) if a.ref is not None and not a.clone and not a.listed
                       and s not in kept and a.ref not in mutated_outputs]
    if not candidates or not _flip(draw):
        return functions
    n, slot = candidates[_integer(draw, 0, len(candidates) - 1)]
    # and for half of those, every candidate argument of that Function: then its outputs require grad
    # only through the tensors it gets as themselves, if any (where Dynamo's tracking of lists shows)
    slots = {s for m, s in candidates if m == n} if _flip(draw) else {slot}
    args = [dataclasses.replace(a, listed=True) if s in slots else a for s, a in enumerate(functions[n].args)]
    return [*functions[:n], dataclasses.replace(functions[n], args=tuple(args)), *functions[n + 1:]]


def _downstream(functions: Sequence[FunctionSpec], ref: str) -> set[str]:
    """`ref` and every Function output made from it, transitively (harness.dataflow's downstream,
    while the graph is drawn)."""
    tainted = {ref}
    for n, fn in enumerate(functions):
        if any(a.ref in tainted for a in fn.args):
            tainted |= {f"f{n}.{k}" for k in fn.tensor_outputs}
    return tainted


def _mutated_outputs(draw: st.DrawFn, functions: list[FunctionSpec], hooks: tuple[HookSpec, ...]
                     ) -> tuple[str, ...]:
    """Computed outputs the user modifies in place after the forward (see GraphSpec)."""
    if any(fn.error for fn in functions) or any(h.kind == "saved_tensors" for h in hooks):
        return ()  # excluded by the spec's validation, with the reasons there
    aliased = {fn.args[o.slot].ref for fn in functions for o in fn.outputs if o.kind in ("input", "view")}
    candidates = [f"f{n}.{k}" for n, fn in enumerate(functions) for k, o in enumerate(fn.outputs)
                  if o.kind == "compute" and f"f{n}.{k}" not in aliased]
    if not candidates or not _flip(draw):
        return ()
    return tuple(candidates[i] for i in draw(_unique_index_lists(len(candidates), 1, 2)))
