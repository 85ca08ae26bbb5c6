"""Plain-data specs of custom-Function graphs.

A spec is frozen, hashable, has a readable repr and a lossless JSON round trip. It
says *what* a graph computes; `harness.build` turns it into real
`torch.autograd.Function` classes and input tensors.

Values in a graph are named by strings:
  "x3"     leaf 3
  "x3[1]"  view 1 of leaf 3 (a leaf with `views=k` has shape (k, *shape))
  "f2.0"   tensor output 0 of Function 2 (Functions only read values made before them)
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

OPS = ("linear", "sin", "square", "tanh")
NONLINEAR_OPS = ("sin", "square", "tanh")
OUTPUT_KINDS = ("compute", "input", "view", "dirty", "const")
SAVE_KINDS = ("inputs", "outputs", "intermediates")
STYLES = ("old", "setup_context")
#: how a Function class is written: "generic" (one class body reading its spec from class
#: attributes and closures, inputs as *args) or "plain" (source text with explicit
#: parameters and literal constants, as users write them; harness/plain.py)
CODE_STYLES = ("generic", "plain")
NEEDS_INPUT_GRAD_MODES = ("ignore", "read", "saved")
#: the name the backward formula is defined under: torch accepts either, and only one
#: (torch/autograd/function.py, BackwardCFunction._get_user_fn: "vjp and backward are alias")
BACKWARD_METHODS = ("backward", "vjp")
#: forward code Dynamo cannot put in a graph, as users write it: a `print`, a Python side
#: effect (appending to a list at module level), a branch on a tensor's value. None of it
#: changes a value; under torch.compile each breaks the graph or sends the Function to the
#: eager fallback
UNTRACEABLE = ("none", "print", "side_effect", "data_branch")
UNUSED_GRAD_MODES = ("none", "zeros")
#: what a forward returns for an input it modified in place and marked dirty: "result", the
#: value of the in-place op (`o = a.mul_(c)`), or "input", the argument itself after the op
#: (`a.mul_(c)`, then `return a`). The same tensor either way; Dynamo traces mark_dirty only
#: for the second (it must see the returned value be the input it was told is dirty)
DIRTY_RETURNS = ("result", "input")
#: how the whole graph's forward is written where it is compiled (torch.compile, torch.jit.trace):
#: "loop", the harness's interpreter over the spec (harness.run.forward), or "straight", one
#: generated plain function with a line per Function application, as users write models
#: (harness.plain.graph_forward_source). Eager paths apply the Functions the same way in both
FORWARD_CODES = ("loop", "straight")
#: GraphSpec.batch_dim: the batch dimension first or last
BATCH_DIMS = (0, -1)
#: how a Function is written: "function", a torch.autograd.Function class; "custom_op", the same
#: math as a torch.library.custom_op with register_autograd (setup_context + backward),
#: register_fake and, for a Function with `vmap`, register_vmap (harness/custom_op.py). What a
#: custom_op cannot be is `custom_op_limit`
APIS = ("function", "custom_op")
#: where a Function's vmap support comes from (FunctionSpec.vmap): "generate", torch's
#: generate_vmap_rule=True; "user", a hand-written `vmap` staticmethod that runs the Function
#: built for the batched shape (harness.build.with_user_vmap)
VMAP_RULES = ("generate", "user")
#: the grad mode a Function is applied under (FunctionSpec.grad_mode): "enabled", or "no_grad"
#: (`with torch.no_grad(): F.apply(...)`, as users evaluate a Function inside a model; where a
#: path compiles the forward, the block is inside the compiled region)
GRAD_MODES = ("enabled", "no_grad")
#: how a Function's backward reads what its forward saved: ctx.saved_tensors, or its deprecated alias
#: ctx.saved_variables, which torch still serves (a DeprecationWarning) and public code still uses
SAVED_READS = ("saved_tensors", "saved_variables")
ERROR_CASES = ("grad_count", "grad_shape", "grad_for_nontensor")
LAYOUTS = ("contiguous", "strided", "transposed")
#: the graph's floating-point dtype: every leaf (but the non-float ones below), value and gradient has it
DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "complex128")
COMPLEX_DTYPES = ("complex64", "complex128")
#: the ops a complex graph uses: those whose majorant in the error bounds' absolute-value twin
#: holds for complex arguments (harness/oracles/bounds.py): |z^2| = |z|^2 and |2z| = 2|z|. sin
#: and tanh have complex CPU kernels, but |sin(iy)| = sinh(y) > |y| and tanh has poles at i*pi/2,
#: so the real majorant "|f(x)| <= |x|, |f'(x)| <= 1" fails for them (docs/coverage.md, Dtypes)
COMPLEX_OPS = ("linear", "square")
#: non-float leaves (LeafSpec.dtype): inputs autograd cannot differentiate, used as masks
INPUT_DTYPES = ("int64", "bool")
BACKWARD_MODES = ("none", "backward", "grad", "retain", "double")
HOOK_KINDS = ("tensor", "retain_grad", "pre", "post", "post_accumulate", "saved_tensors")

_REF = re.compile(r"^(?:x(\d+)(?:\[(\d+)\])?|f(\d+)\.(\d+))$")


class SpecError(ValueError):
    """An invalid spec: the message names the field and the value."""


@dataclass(frozen=True)
class Term:
    """coeff * op(input[slot]), one summand of a computed output."""

    slot: int
    op: str = "linear"
    coeff: float = 1.0


@dataclass(frozen=True)
class OutputSpec:
    """One output of a Function.

    compute: bias + sum of terms (a fresh tensor); input: input[slot] returned as-is;
    view: a view of input[slot]; dirty: input[slot] scaled in place by `coeff` and
    marked dirty; const: the non-tensor `value`.
    """

    kind: str = "compute"
    terms: tuple[Term, ...] = ()
    bias: float = 0.0
    slot: int = -1
    coeff: float = 1.0
    non_differentiable: bool = False
    value: Any = None
    #: a computed output is multiplied by input[mask], an int64 or bool tensor argument cast to
    #: the graph's dtype (a mask, or an integer multiplier), as users pass masks beside float
    #: inputs. torch sees a non-differentiable input there: ctx.needs_input_grad is False for
    #: it and backward returns None for it. -1: no mask
    mask: int = -1
    #: a computed output the forward returns inside a one-element list (`return y, [z]`), as
    #: users return extra results: torch's apply wraps only the tensors it is returned at the top
    #: level (torch/csrc/autograd/python_function.cpp, _wrap_outputs), so the list is a
    #: non-tensor output: the tensor in it has no grad_fn and does not require grad, backward
    #: gets None for it, and the jvp returns None for it
    listed: bool = False

    @property
    def differentiable(self) -> bool:
        """Does autograd track this output (a tensor output, not marked non-differentiable, not in a list)?"""
        return self.kind != "const" and not self.non_differentiable and not self.listed


@dataclass(frozen=True)
class Arg:
    """A positional argument: a tensor value by reference, or a non-tensor constant.

    `clone` feeds a fresh clone of the value (what a dirty slot needs, so the in-place
    update touches nothing else in the graph); with `view`, a view of that clone
    (`clone().view_as(...)`), so that a dirty input is a view and torch rebases its base's
    history on the Function (CopySlices).
    """

    ref: str | None = None
    clone: bool = False
    const: Any = None
    view: bool = False
    #: the tensor is passed inside a one-element list (`F.apply(x, [y])`), as users pass extra
    #: tensors: torch's apply sees a non-tensor argument (torch/csrc/autograd/python_function.cpp,
    #: unpack_input checks each argument with THPVariable_Check), so the forward reads the value but
    #: autograd does not: ctx.needs_input_grad is False there, backward returns None for it, the jvp
    #: gets no tangent for it, and the outputs' history has no edge to it. Read by computed outputs only
    listed: bool = False

    @property
    def is_tensor_input(self) -> bool:
        """Does autograd see a tensor input here (a tensor argument not passed inside a list)?"""
        return self.ref is not None and not self.listed

    def uncloned(self) -> "Arg":
        """The value itself, neither cloned nor a view of a clone (a view needs the clone)."""
        return dataclasses.replace(self, clone=False, view=False)


@dataclass(frozen=True)
class FunctionSpec:
    args: tuple[Arg, ...] = ()
    outputs: tuple[OutputSpec, ...] = (OutputSpec(kind="const", value=0),)
    tuple_output: bool = True
    style: str = "old"
    save: tuple[str, ...] = ()
    materialize_grads: bool = True
    needs_input_grad: str = "ignore"
    unused_grad: str = "none"
    once_differentiable: bool = False
    jvp: bool = False
    vmap: bool = False
    ctx_state: bool = False
    error: str | None = None
    code: str = "generic"
    backward_method: str = "backward"
    untraceable: str = "none"
    #: the forward makes its computed outputs by applying an inner Function
    #: (`F<n>Inner.apply`, harness.build.inner_spec), as users compose Functions
    nested: bool = False
    #: DIRTY_RETURNS: how a dirty output is returned
    dirty_return: str = "result"
    #: APIS: an autograd.Function class or a torch.library.custom_op
    api: str = "function"
    #: VMAP_RULES: generate_vmap_rule or a user vmap staticmethod (where `vmap` is set)
    vmap_rule: str = "generate"
    #: the class sets `clear_saved_tensors_on_access = True` (torch 2.13+): the first
    #: ctx.saved_tensors drops ctx's references (a second access raises)
    clear_saved_tensors_on_access: bool = False
    #: GRAD_MODES: the grad mode the runner applies the Function under
    grad_mode: str = "enabled"
    #: SAVED_READS: the ctx attribute the backward reads its saved tensors from (the jvp reads
    #: ctx.saved_tensors, which there is the save_for_forward tuple). Not drawn by the strategy:
    #: set by hand (tests, reproducers, a user's own spec)
    saved_read: str = "saved_tensors"
    #: the last `keyword_args` arguments are passed to `apply` by keyword, last to first
    #: (`F.apply(a0, a2=z, a1=y)`, FunctionSpec.keyword_split),
    #: named as the forward's parameters are (`parameter_name`): torch binds them to their
    #: positions (torch/autograd/function.py, Function.apply's bind_default_args under
    #: setup_context; the C++ apply's keyword resolution for old style), and Dynamo does the
    #: same in its own code (torch/_dynamo/variables/misc.py, AutogradFunctionVariable._resolve_kwargs)
    keyword_args: int = 0
    #: the first of the keyword arguments, a constant, is left out of the call: the forward's
    #: parameter has it as its default (every later parameter defaults to None, as Python needs),
    #: which torch fills in (Function.apply's bind_default_args; setup_context style only: the C++
    #: apply of an old-style Function fills in no default)
    keyword_default: bool = False

    @property
    def tensor_slots(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if a.ref is not None)

    @property
    def tensor_outputs(self) -> tuple[int, ...]:
        return tuple(k for k, o in enumerate(self.outputs) if o.kind != "const")

    @property
    def listed_slots(self) -> tuple[int, ...]:
        """Slots of the tensor arguments passed inside a list (Arg.listed)."""
        return tuple(i for i, a in enumerate(self.args) if a.listed)

    def unpack_args(self, passed: Sequence[Any]) -> list[Any]:
        """The argument values by slot from what the forward received: a listed one (Arg.listed)
        taken out of its one-element list (harness.run._argument puts it in one)."""
        return [v[0] if a.listed else v for a, v in zip(self.args, passed)]

    @property
    def mask_slots(self) -> tuple[int, ...]:
        """Slots of the int64 / bool arguments that computed outputs are multiplied by (sorted)."""
        return tuple(sorted({o.mask for o in self.outputs if o.mask >= 0}))

    @property
    def float_slots(self) -> tuple[int, ...]:
        """Tensor inputs of the graph's float dtype: every tensor slot but the masks and the tensors
        passed in a list (Arg.listed: torch sees no tensor input there)."""
        return tuple(s for s in self.tensor_slots if s not in self.mask_slots and self.args[s].is_tensor_input)

    @property
    def nonlinear_slots(self) -> tuple[int, ...]:
        """Slots whose derivative needs the input value (sorted, unique)."""
        return tuple(sorted({t.slot for o in self.outputs for t in o.terms if t.op in NONLINEAR_OPS}))

    def keyword_split(self, args: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """`args` as `apply` is called with them: the positional ones, and the last
        `keyword_args` by their parameter names, written last to first (`F.apply(a0, a2=z, a1=y)`):
        so only binding by name, not the order they come in, puts them in their places."""
        cut = len(args) - self.keyword_args
        passed = range(cut + 1 if self.keyword_default else cut, len(args))  # a default is left out
        return tuple(args[:cut]), {parameter_name(i): args[i] for i in reversed(passed)}

    def parameter_defaults(self) -> dict[int, Any]:
        """The forward's parameter defaults by slot (keyword_default): the omitted constant, and None
        for every parameter after it."""
        if not self.keyword_default:
            return {}
        first = len(self.args) - self.keyword_args
        return {first: self.args[first].const, **{i: None for i in range(first + 1, len(self.args))}}

    def pack_outputs(self, outputs: Sequence[Any]) -> Any:
        """What the forward returns for its output values in order: a listed output inside a
        one-element list (OutputSpec.listed), all in a tuple unless `tuple_output` is off."""
        packed = [[v] if o.listed else v for o, v in zip(self.outputs, outputs)]
        return tuple(packed) if self.tuple_output else packed[0]

    def unpack_outputs(self, returned: Any) -> list[Any]:
        """The output values in order from what `apply` (or the forward) returned: pack_outputs
        undone. A listed output that is not a one-element list is a RuntimeError (an observation
        of the path that returned it)."""
        outs = list(returned) if self.tuple_output and isinstance(returned, tuple) else [returned]
        for k, o in enumerate(self.outputs):
            if o.listed and k < len(outs):
                if not (isinstance(outs[k], list) and len(outs[k]) == 1):
                    raise RuntimeError(f"output {k} is returned in a one-element list, and came back as "
                                       f"{type(outs[k]).__name__}")
                outs[k] = outs[k][0]
        return outs

    def inner(self) -> FunctionSpec:
        """The Function a `nested` Function applies inside its forward: the same arguments,
        the computed outputs (as a tuple), setup_context style (what torch.func needs of
        every Function it meets), and a jvp and generate_vmap_rule where the outer Function
        has them (Dynamo falls back to eager for any Function with a jvp). It runs under the
        outer forward's no_grad, so autograd never calls its backward; it is correct all the
        same."""
        outputs = tuple(dataclasses.replace(o, non_differentiable=False, listed=False) for o in self.outputs
                        if o.kind == "compute")
        # (the outer forward passes the values themselves, taken out of their lists)
        inner = FunctionSpec(args=tuple(dataclasses.replace(a.uncloned(), listed=False) for a in self.args),
                             outputs=outputs,
                             style="setup_context", jvp=self.jvp, vmap=self.vmap, code=self.code)
        return dataclasses.replace(inner, save=("inputs",) if inner.nonlinear_slots else ())


def parameter_name(slot: int) -> str:
    """The name of a forward's parameter for argument `slot`: what a keyword argument is
    passed as (FunctionSpec.keyword_args), and the plain style's parameter names."""
    return f"a{slot}"


@dataclass(frozen=True)
class LeafSpec:
    """A leaf tensor of the graph's shape (or `views` views of one of shape (views, *shape)).

    `on_cpu`: the leaf stays on the CPU when the graph is built on CUDA, a mixed-device input
    as torch allows it: only a 0-dim CPU tensor may be an operand of CUDA kernels (a "CPU
    scalar"), and the autograd engine moves a 0-dim gradient back to its input's device. So
    it needs shape (). It is meant for CUDA runs; on the CPU every leaf is there already, so
    it changes nothing, and `--device cpu,cuda` compares such a graph across devices."""

    requires_grad: bool = True
    layout: str = "contiguous"
    views: int = 0
    on_cpu: bool = False
    #: None: the graph's dtype. "int64" or "bool" (INPUT_DTYPES): a non-float leaf, which
    #: does not require grad and is read only as a mask (OutputSpec.mask)
    dtype: str | None = None


@dataclass(frozen=True)
class HookSpec:
    """A hook on a value ("tensor", "retain_grad", "pre", "post"), on a leaf
    ("post_accumulate"), or around the whole forward ("saved_tensors", target None)."""

    kind: str
    target: str | None = None


@dataclass(frozen=True)
class GraphSpec:
    shape: tuple[int, ...] = (3,)
    dtype: str = "float64"
    leaves: tuple[LeafSpec, ...] = ()
    functions: tuple[FunctionSpec, ...] = ()
    backward: str = "backward"
    forward_ad: bool = False
    trace: bool = False
    hooks: tuple[HookSpec, ...] = ()
    seed: int = 0
    #: partial backward: the leaves (by index) that backward(inputs=...) or autograd.grad
    #: differentiate; empty: every leaf that requires grad
    grad_leaves: tuple[int, ...] = ()
    #: computed Function outputs that the user scales in place (`mul_(2.0)`) after the
    #: forward, before backward: where a Function whose backward runs saved one, torch's
    #: version-counter check raises at backward (harness.dataflow.version_error_expected)
    mutated_outputs: tuple[str, ...] = ()
    #: the whole forward runs inside one non-reentrant torch.utils.checkpoint region: saved
    #: tensors are dropped and the Functions' forwards run again at backward
    checkpoint: bool = False
    #: FORWARD_CODES: how the forward is written where a path compiles it
    forward_code: str = "loop"
    #: leaves (by index) the batched torch.func paths pass to vmap unbatched, one value shared by
    #: every sample (`in_dims=None`): the generated vmap rule then reduces their gradients over the
    #: batch (functorch's reductify). (No Function modifies a leaf in place: a dirty input is a
    #: clone.) Other paths ignore it.
    batch_shared: tuple[int, ...] = ()
    #: where the batched torch.func paths put the batch dimension of each batched leaf, as vmap's
    #: in_dims: 0, the first dim, or -1, the last. Inside the Functions a non-zero batch dim reaches
    #: functorch's own handling of it (the generated vmap rule is called with those in_dims,
    #: torch/_functorch/autograd_function.py). The outputs keep theirs first (out_dims 0: torch 2.13's
    #: vmap gets any other out_dims wrong for an output that is not batched, pytorch/pytorch#178425,
    #: docs/func.md). Other paths ignore it.
    batch_dim: int = 0
    #: the backward runs under compiled autograd where the `dynamo` path compiles the forward:
    #: compiled autograd then captures the backward of the region torch.compile
    #: traced (AOT's CompiledFunctionBackward, copied into its graph; backend eager: the traced
    #: Functions' own backwards), as `torch._dynamo.config.compiled_autograd = True` makes it in a
    #: training step. Other paths ignore it (`compiled` always captures the backward).
    compiled_backward: bool = False

    def __post_init__(self) -> None:
        validate(self)

    # --- JSON round trip -------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(_to_plain(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GraphSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise SpecError(f"spec is not valid JSON ({e}); fix the file or regenerate it.") from None
        return _from_plain(cls, data, "graph")

    # --- derived facts ---------------------------------------------------------
    def value_refs(self) -> tuple[str, ...]:
        """Every tensor value, in creation order."""
        return value_refs(self.leaves, self.functions)

    def non_float_refs(self) -> frozenset[str]:
        """The int64 / bool leaves (LeafSpec.dtype)."""
        return frozenset(f"x{i}" for i, leaf in enumerate(self.leaves) if leaf.dtype is not None)

    def non_differentiable_refs(self) -> frozenset[str]:
        return frozenset(
            f"f{n}.{k}"
            for n, fn in enumerate(self.functions)
            for k, o in enumerate(fn.outputs)
            if o.non_differentiable
        )

    def listed_refs(self) -> frozenset[str]:
        """The outputs a Function returns inside a list (OutputSpec.listed): untracked by autograd."""
        return frozenset(f"f{n}.{k}" for n, fn in enumerate(self.functions) for k, o in enumerate(fn.outputs)
                         if o.listed)


def value_refs(leaves: Sequence[LeafSpec], functions: Sequence[FunctionSpec]) -> tuple[str, ...]:
    """GraphSpec.value_refs of a graph with these leaves and Functions (also while one is drawn)."""
    refs: list[str] = []
    for i, leaf in enumerate(leaves):
        refs += [f"x{i}[{j}]" for j in range(leaf.views)] if leaf.views else [f"x{i}"]
    for n, fn in enumerate(functions):
        refs += [f"f{n}.{k}" for k in fn.tensor_outputs]
    return tuple(refs)


# --- validation -------------------------------------------------------------------


def _check(cond: bool, where: str, value: Any, why: str) -> None:
    if not cond:
        raise SpecError(f"{where}={value!r} is invalid: {why}.")


def _parse_ref(ref: str) -> tuple[str, int, int]:
    m = _REF.match(ref)
    if not m:
        raise SpecError(f"ref={ref!r} is invalid: use 'x<leaf>', 'x<leaf>[<view>]' or 'f<function>.<output>'.")
    if m.group(1) is not None:
        return "x", int(m.group(1)), -1 if m.group(2) is None else int(m.group(2))
    return "f", int(m.group(3)), int(m.group(4))


def validate(g: GraphSpec) -> None:
    _check(g.dtype in DTYPES, "dtype", g.dtype, f"choose one of {DTYPES}")
    _check(all(isinstance(d, int) and d >= 0 for d in g.shape), "shape", g.shape, "sizes are ints >= 0")
    _check(g.backward in BACKWARD_MODES, "backward", g.backward, f"choose one of {BACKWARD_MODES}")
    _check(g.forward_code in FORWARD_CODES, "forward_code", g.forward_code, f"choose one of {FORWARD_CODES}")
    for i, leaf in enumerate(g.leaves):
        w = f"leaves[{i}]"
        _check(leaf.layout in LAYOUTS, f"{w}.layout", leaf.layout, f"choose one of {LAYOUTS}")
        _check(leaf.views >= 0, f"{w}.views", leaf.views, "must be >= 0")
        _check(not leaf.on_cpu or (g.shape == () and not leaf.views), f"{w}.on_cpu", leaf.on_cpu,
               "only a 0-dim tensor may stay on the CPU beside CUDA tensors (shape (), no views)")
        _check(leaf.layout != "transposed" or len(g.shape) >= 2, f"{w}.layout", leaf.layout,
               "a transposed leaf needs a shape with 2 or more dims")
        if leaf.dtype is not None:
            _check(leaf.dtype in INPUT_DTYPES, f"{w}.dtype", leaf.dtype,
                   f"None (the graph's dtype) or one of {INPUT_DTYPES}")
            _check(not leaf.requires_grad, f"{w}.requires_grad", leaf.requires_grad,
                   "torch: 'Only Tensors of floating point dtype can require gradients'")
            _check(not leaf.views, f"{w}.views", leaf.views, "a non-float leaf is one whole tensor")
    _check(tuple(sorted(set(g.grad_leaves))) == g.grad_leaves, "grad_leaves", g.grad_leaves,
           "sorted leaf indices, each once")
    for i in g.grad_leaves:
        _check(0 <= i < len(g.leaves) and g.leaves[i].requires_grad, "grad_leaves", g.grad_leaves,
               f"leaf {i} is not a leaf of this graph that requires grad")
    _check(not g.grad_leaves or g.backward != "none", "grad_leaves", g.grad_leaves,
           "a partial backward needs a backward mode other than 'none'")
    if g.backward in ("retain", "double"):
        _check(not any(fn.clear_saved_tensors_on_access for fn in g.functions), "backward", g.backward,
               "a Function with clear_saved_tensors_on_access=True cannot run its backward twice (torch: "
               "'saved_tensors can only be accessed once'); use backward 'backward' or 'grad'")
    known = set(g.value_refs())
    made: set[str] = {r for r in known if r.startswith("x")}
    non_float = g.non_float_refs()
    for n, fn in enumerate(g.functions):
        _validate_function(fn, f"functions[{n}]", made)
        _validate_masks(fn, f"functions[{n}]", non_float)
        if g.dtype in COMPLEX_DTYPES:
            _check(all(t.op in COMPLEX_OPS for o in fn.outputs for t in o.terms), f"functions[{n}].outputs",
                   [t.op for o in fn.outputs for t in o.terms],
                   f"a {g.dtype} graph uses the ops {COMPLEX_OPS} only (their error bounds hold for "
                   "complex values; see COMPLEX_OPS)")
        _check(fn.error != "grad_shape" or any(d != 1 for d in g.shape), f"functions[{n}].error", fn.error,
               f"a wrong-shaped gradient cannot be made for shape {g.shape} (every size 1 broadcasts)")
        made |= {f"f{n}.{k}" for k in fn.tensor_outputs}
    if g.backward == "double":
        _check(not any(fn.once_differentiable or "intermediates" in fn.save and "inputs" not in fn.save
                       and fn.nonlinear_slots for fn in g.functions),
               "backward", g.backward,
               "double backward needs every Function differentiable twice (no once_differentiable, "
               "nonlinear derivatives from saved inputs)")
    if g.trace:
        _check(not any(o.kind == "dirty" for fn in g.functions for o in fn.outputs), "trace", g.trace,
               "torch.jit.trace does not support mark_dirty in custom Functions ('inplace ... not supported in the JIT')")
        _check(not any(o.kind == "const" for fn in g.functions for o in fn.outputs), "trace", g.trace,
               "a traced custom Function must return only tensors (the trace types every output as Tensor)")
        _check(not any(fn.grad_mode == "no_grad" for fn in g.functions), "trace", g.trace,
               "torch.jit.trace does not keep a no_grad block: the traced Function's outputs require grad")
        _check(not any(fn.listed_slots for fn in g.functions), "trace", g.trace,
               "torch.jit.trace of a Function given a list argument is not modelled: pass the tensor itself")
        _check(not g.listed_refs(), "trace", g.trace,
               "a traced custom Function returns tensors only (the trace types every output as Tensor), "
               "and a list is not one")
    _validate_mutated_outputs(g)
    _check(tuple(sorted(set(g.batch_shared))) == g.batch_shared, "batch_shared", g.batch_shared,
           "sorted leaf indices, each once")
    _check(not g.batch_shared or len(g.batch_shared) < len(g.leaves), "batch_shared", g.batch_shared,
           "vmap needs one batched input (torch: 'vmap: Expected at least one Tensor to vmap over'): leave one "
           "leaf out")
    for i in g.batch_shared:
        _check(0 <= i < len(g.leaves), "batch_shared", g.batch_shared, f"leaf {i} is not a leaf of this graph")
    _check(g.batch_dim in BATCH_DIMS, "batch_dim", g.batch_dim, f"choose one of {BATCH_DIMS}")
    _check(not g.compiled_backward or g.backward != "none", "compiled_backward", g.compiled_backward,
           "compiled autograd needs a backward to capture (backward='none' runs none)")
    if g.checkpoint:
        _check(not g.trace, "checkpoint", g.checkpoint, "the checkpointed forward is not also traced by torch.jit")
        _check(not g.mutated_outputs, "checkpoint", g.checkpoint,
               "outputs modified in place are not combined with checkpoint (its recomputation decides what is saved)")
    if g.forward_ad:
        _check(all(fn.jvp for fn in g.functions), "forward_ad", True, "every Function needs a jvp")
    for h, hook in enumerate(g.hooks):
        w = f"hooks[{h}]"
        _check(hook.kind in HOOK_KINDS, f"{w}.kind", hook.kind, f"choose one of {HOOK_KINDS}")
        if hook.kind == "saved_tensors":
            _check(hook.target is None, f"{w}.target", hook.target, "saved_tensors hooks wrap the forward")
        else:
            _check(hook.target in known, f"{w}.target", hook.target, "not a tensor value of this graph")
        if hook.kind == "post_accumulate":
            _check(hook.target is not None and re.fullmatch(r"x\d+", hook.target) is not None, f"{w}.target",
                   hook.target, "post-accumulate-grad hooks go on whole leaves")


def _validate_masks(fn: FunctionSpec, w: str, non_float: frozenset[str]) -> None:
    """An int64 / bool argument is read only as a mask, and a mask is one."""
    masks = set(fn.mask_slots)
    for k, out in enumerate(fn.outputs):
        if out.mask >= 0:
            _check(out.kind == "compute", f"{w}.outputs[{k}].mask", out.mask, "only computed outputs are masked")
            _check(out.mask < len(fn.args) and fn.args[out.mask].ref in non_float, f"{w}.outputs[{k}].mask",
                   out.mask, "not an int64 / bool tensor argument")
    for a, arg in enumerate(fn.args):
        if arg.ref in non_float:
            _check(a in masks and not arg.clone, f"{w}.args[{a}]", arg,
                   "an int64 / bool argument is read only as a mask (OutputSpec.mask), uncloned")
            _check(a not in {t.slot for o in fn.outputs for t in o.terms}
                   | {o.slot for o in fn.outputs if o.kind != "compute"}, f"{w}.args[{a}]", arg,
                   "an int64 / bool argument is read only as a mask (OutputSpec.mask)")
    if fn.error is not None:
        _check(len(fn.float_slots) > 0, f"{w}.error", fn.error, "needs a float tensor argument")


def _validate_mutated_outputs(g: GraphSpec) -> None:
    w = "mutated_outputs"
    _check(len(set(g.mutated_outputs)) == len(g.mutated_outputs), w, g.mutated_outputs, "each output at most once")
    aliased = {fn.args[o.slot].ref for fn in g.functions for o in fn.outputs if o.kind in ("input", "view")}
    listed_reads = {a.ref for fn in g.functions for a in fn.args if a.listed}
    for ref in g.mutated_outputs:
        _check(ref not in listed_reads, w, g.mutated_outputs,
               f"{ref!r} is passed in a list to a later Function (the oracles read a clone of a modified output, "
               "and a list has none)")
        kind, n, k = _parse_ref(ref)
        _check(kind == "f" and n < len(g.functions) and k < len(g.functions[n].outputs)
               and g.functions[n].outputs[k].kind == "compute", w, g.mutated_outputs,
               f"{ref!r} is not a computed Function output (only fresh outputs are modified in place)")
        _check(ref not in aliased, w, g.mutated_outputs,
               f"{ref!r} is returned as-is or as a view by a later Function (in-place on views is its own axis)")
    if g.mutated_outputs:
        _check(not any(fn.error for fn in g.functions), w, g.mutated_outputs,
               "not combined with a deliberate error case (which error torch reports first is the engine's order)")
        _check(not any(h.kind == "saved_tensors" for h in g.hooks), w, g.mutated_outputs,
               "saved_tensors hooks bypass torch's version check (SavedVariable::unpack checks versions only "
               "without hooks), so backward would silently read the modified value")


def _validate_function(fn: FunctionSpec, w: str, made: set[str]) -> None:
    _check(fn.style in STYLES, f"{w}.style", fn.style, f"choose one of {STYLES}")
    _check(fn.code in CODE_STYLES, f"{w}.code", fn.code, f"choose one of {CODE_STYLES}")
    _check(fn.dirty_return in DIRTY_RETURNS, f"{w}.dirty_return", fn.dirty_return, f"choose one of {DIRTY_RETURNS}")
    _check(fn.grad_mode in GRAD_MODES, f"{w}.grad_mode", fn.grad_mode, f"choose one of {GRAD_MODES}")
    _check(fn.saved_read in SAVED_READS, f"{w}.saved_read", fn.saved_read, f"choose one of {SAVED_READS}")
    _check(fn.grad_mode != "no_grad" or all(o.kind in ("compute", "const") for o in fn.outputs), f"{w}.grad_mode",
           fn.grad_mode, "under no_grad a Function returns computed and constant outputs only: torch's no_grad "
           "rules for aliases (a view output keeps requires_grad, an input returned as-is does not, an input "
           "modified in place keeps its history without the op) are not modelled by the math oracle; use "
           "grad_mode='enabled'")
    _check(fn.untraceable in UNTRACEABLE, f"{w}.untraceable", fn.untraceable, f"choose one of {UNTRACEABLE}")
    _check(fn.untraceable != "data_branch" or fn.tensor_slots, f"{w}.untraceable", fn.untraceable,
           "a branch on a tensor's value needs a tensor argument")
    _check(not fn.nested or any(o.kind == "compute" for o in fn.outputs), f"{w}.nested", fn.nested,
           "the inner Function makes the computed outputs: needs one")
    _check(fn.backward_method in BACKWARD_METHODS, f"{w}.backward_method", fn.backward_method,
           f"choose one of {BACKWARD_METHODS}")
    _check(all(s in SAVE_KINDS for s in fn.save) and tuple(sorted(set(fn.save))) == fn.save,
           f"{w}.save", fn.save, f"a sorted subset of {SAVE_KINDS}")
    _check(fn.needs_input_grad in NEEDS_INPUT_GRAD_MODES, f"{w}.needs_input_grad", fn.needs_input_grad,
           f"choose one of {NEEDS_INPUT_GRAD_MODES}")
    _check(fn.unused_grad in UNUSED_GRAD_MODES, f"{w}.unused_grad", fn.unused_grad,
           f"choose one of {UNUSED_GRAD_MODES}")
    _check(fn.error is None or fn.error in ERROR_CASES, f"{w}.error", fn.error, f"None or one of {ERROR_CASES}")
    _check(not fn.vmap or fn.style == "setup_context", f"{w}.vmap", fn.vmap,
           "generate_vmap_rule needs setup_context style")
    _check(fn.api in APIS, f"{w}.api", fn.api, f"choose one of {APIS}")
    _check(fn.vmap_rule in VMAP_RULES, f"{w}.vmap_rule", fn.vmap_rule, f"choose one of {VMAP_RULES}")
    if fn.vmap_rule == "user":
        _check(fn.vmap, f"{w}.vmap_rule", fn.vmap_rule, "a user vmap staticmethod is the Function's vmap "
               "support: set vmap=True with it")
        _check(fn.api == "function", f"{w}.vmap_rule", fn.vmap_rule, "a vmap staticmethod belongs to an "
               "autograd.Function; a custom_op's vmap rule is its register_vmap (keep vmap_rule='generate')")
        _check(fn.code == "generic", f"{w}.vmap_rule", fn.vmap_rule, "harness/plain.py writes no vmap "
               "staticmethod yet: use code='generic' with it")
    if fn.api == "custom_op":
        why = custom_op_limit(fn)
        _check(why is None, f"{w}.api", fn.api, f"this Function cannot be a custom_op: {why}")
    _check(isinstance(fn.keyword_args, int) and not isinstance(fn.keyword_args, bool)
           and 0 <= fn.keyword_args <= len(fn.args), f"{w}.keyword_args", fn.keyword_args,
           f"the number of last arguments passed by keyword: an integer from 0 to {len(fn.args)} (the arguments)")
    if fn.keyword_default:
        _check(fn.keyword_args > 0 and fn.args[len(fn.args) - fn.keyword_args].ref is None, f"{w}.keyword_default",
               fn.keyword_default, "the argument left to its default is the first keyword argument, a constant")
        _check(fn.style == "setup_context", f"{w}.keyword_default", fn.keyword_default,
               "torch fills in a forward's defaults only for setup_context style (Function.apply, "
               "bind_default_args); the C++ apply of a forward(ctx, ...) passes what it was given")
    _check(len(fn.outputs) >= 1, f"{w}.outputs", fn.outputs, "a Function returns at least one output")
    _check(fn.tuple_output or len(fn.outputs) == 1, f"{w}.tuple_output", fn.tuple_output,
           "a single (non-tuple) return needs exactly one output")
    aliased_slots = {o.slot for o in fn.outputs if o.kind != "compute"} | set(fn.mask_slots)
    for a, arg in enumerate(fn.args):
        _check(not arg.view or arg.clone, f"{w}.args[{a}].view", arg.view, "a view is taken of a clone (clone=True)")
        if arg.listed:
            _check(arg.ref is not None and not arg.clone and a not in aliased_slots, f"{w}.args[{a}].listed",
                   arg.listed, "a tensor argument passed in a list is read by computed outputs only (not a mask, "
                   "not returned or modified in place, not cloned)")
        if arg.ref is None:
            _check(not arg.clone, f"{w}.args[{a}].clone", arg.clone, "only tensor arguments can be cloned")
        else:
            _parse_ref(arg.ref)
            _check(arg.ref in made, f"{w}.args[{a}].ref", arg.ref, "refers to no earlier value")
    tensor_slots = set(fn.tensor_slots)
    dirty = [o.slot for o in fn.outputs if o.kind == "dirty"]
    _check(len(dirty) == len(set(dirty)), f"{w}.outputs", dirty, "an input is marked dirty at most once")
    aliased = [o.slot for o in fn.outputs if o.kind in ("input", "view")]
    _check(not set(dirty) & set(aliased), f"{w}.outputs", dirty, "a dirty input is not also returned as a view")
    for k, out in enumerate(fn.outputs):
        ow = f"{w}.outputs[{k}]"
        _check(out.kind in OUTPUT_KINDS, f"{ow}.kind", out.kind, f"choose one of {OUTPUT_KINDS}")
        _check(not out.non_differentiable or out.kind == "compute", f"{ow}.non_differentiable",
               out.non_differentiable, "only computed outputs are marked non-differentiable")
        if out.listed:
            _check(out.kind == "compute" and not out.non_differentiable, f"{ow}.listed", out.listed,
                   "only a computed output not marked non-differentiable is returned in a list "
                   "(torch tracks neither: marking it would say nothing)")
        if out.kind == "compute":
            for t in out.terms:
                _check(t.op in OPS, f"{ow}.terms.op", t.op, f"choose one of {OPS}")
                _check(t.slot in tensor_slots, f"{ow}.terms.slot", t.slot, "not a tensor argument")
                _check(t.slot not in dirty, f"{ow}.terms.slot", t.slot,
                       "a dirty input is not read by computed outputs")
        elif out.kind in ("input", "view", "dirty"):
            _check(out.slot in tensor_slots, f"{ow}.slot", out.slot, "not a tensor argument")
        if out.kind == "const" and fn.code == "plain":
            _check(_has_literal(out.value), f"{ow}.value", out.value,
                   "a plain Function writes its constants as literals, which make plain tuples; "
                   "use None, a number or a string, or code='generic'")
        if out.kind == "dirty":
            _check(fn.args[out.slot].clone, f"{ow}.slot", out.slot, "a dirty input must be a clone (clone=True)")
            _check(not fn.args[out.slot].view or len(fn.outputs) == 1, f"{ow}.slot", out.slot,
                   "a Function that modifies a view input in place returns exactly one output, non-tensor ones "
                   "counted (torch: 'If your Function modifies inplace an input that is a view of another Tensor, "
                   "your Function cannot return more than one Tensor', torch/csrc/autograd/custom_function.cpp)")
    if fn.error == "grad_for_nontensor":
        _check(len(tensor_slots) < len(fn.args), f"{w}.error", fn.error, "needs a non-tensor argument")
    if fn.error is not None:
        _check(len(tensor_slots) > 0, f"{w}.error", fn.error, "needs a tensor argument")
    if fn.style == "setup_context" and any(o.kind == "dirty" for o in fn.outputs):
        _check("outputs" not in fn.save, f"{w}.save", fn.save,
               "torch refuses to save a dirty input returned as-is when setup_context is overridden")
    if fn.style == "setup_context" and any(o.kind == "input" for o in fn.outputs):
        _check(set(fn.save) <= {"intermediates"}, f"{w}.save", fn.save,
               "torch refuses to save an input that is returned as-is when setup_context is overridden "
               "(save intermediates only, or return a view)")
        _check(not (fn.jvp and fn.nonlinear_slots), f"{w}.jvp", fn.jvp,
               "a jvp needs save_for_forward of inputs, which torch refuses for an input returned as-is "
               "when setup_context is overridden (return a view)")
    if fn.nonlinear_slots:
        _check("inputs" in fn.save or "intermediates" in fn.save, f"{w}.save", fn.save,
               "nonlinear terms need saved inputs or intermediates for their derivative")


# --- other forms of the same Function ----------------------------------------------------
#
# torch.library.custom_op's limits, each with its source in torch 2.13 (torch/_library/):


def custom_op_limit(fn: FunctionSpec) -> str | None:
    """Why `fn` cannot be written as a torch.library.custom_op (harness/custom_op.py), or None.
    The op takes the tensor arguments (constants are part of the op), returns the computed
    outputs, and its Python wrapper returns the constant outputs beside them."""
    kinds = {o.kind for o in fn.outputs}
    if fn.listed_slots:
        return ("a custom_op takes Tensor, a list of Tensors, or constants (torch/_library/infer_schema.py): a tensor "
                "in a list would be a Tensor[] argument the dispatcher tracks, not the untracked value a Function's "
                "list argument is")
    if any(o.listed for o in fn.outputs):
        return ("a custom_op returns its outputs as tensors the dispatcher tracks (torch/_library/infer_schema.py "
                "takes Tensor or a list of them, all of them outputs of the op): a tensor returned in a list "
                "beside them would be an op output autograd differentiates, not the untracked value a "
                "Function's listed output is")
    if fn.keyword_args:
        return ("keyword_args is an axis of Function.apply; a custom_op's Python wrapper (harness/custom_op.py) "
                "takes its arguments by position, and the op itself is called with the tensors alone")
    if fn.clear_saved_tensors_on_access:
        return ("clear_saved_tensors_on_access is a class attribute of a Function subclass; a custom_op's ctx "
                "belongs to the Function torch/_library/autograd.py makes for it, which sets none")
    if kinds & {"input", "view"}:
        return ("a custom_op's outputs may not alias its inputs (torch/_library/utils.py, "
                "check_aliasing_constraint: 'may not alias any inputs to this custom operator'), so it "
                "returns no input as-is and no view of one")
    if "dirty" in kinds:
        return ("an in-place custom_op needs mutates_args, and torch registers no autograd formula for a "
                "mutating op (custom_ops.py, register_autograd: 'Cannot register autograd formula for "
                "non-functional operator')")
    if "compute" not in kinds:
        return "the op computes the Function's tensor outputs, and this Function has none"
    if not fn.tensor_slots:
        return ("the dispatcher chooses a custom_op's kernel from its tensor arguments, and this Function "
                "has none (custom_ops.py: 'Functions without tensor inputs are required to have a "
                "`device: torch.device` argument')")
    if fn.jvp:
        return ("a custom_op has no forward-mode AD: torch/_library/autograd.py, make_autograd_impl, "
                "defines only forward and backward for it, so a user jvp has nowhere to go")
    if fn.style != "setup_context":
        return ("register_autograd takes setup_context(ctx, inputs, output) and backward(ctx, *grads) "
                "(custom_ops.py): a custom_op is written in setup_context style")
    if fn.backward_method != "backward":
        return "register_autograd takes the backward formula as a function: there is no 'vjp' method name"
    if fn.error is not None:
        return ("torch checks a custom_op's gradients through torch/_library/autograd.py's generated Function, "
                "whose extra metadata input shifts the counts and indices of the deliberate error cases")
    if fn.code == "plain" and fn.vmap:
        return ("harness/plain.py writes no register_vmap rule (it would need the op made for the batched "
                "shape): use code='generic' or vmap=False with it")
    return None


#: the torch.library namespace of the harness's custom_op Functions' ops
CUSTOM_OP_NAMESPACE = "afh"


def custom_op_name(fn: FunctionSpec, index: int, shape: tuple[int, ...], dtype: Any, device: Any) -> str:
    """'afh::g<hash>_f<index>': the op of a custom_op Function (harness.custom_op registers it,
    harness.plain writes its registration), one name per Function spec and graph setting, so
    names never clash."""
    digest = hashlib.sha1(repr((fn, shape, str(dtype), str(device))).encode()).hexdigest()[:16]
    return f"{CUSTOM_OP_NAMESPACE}::g{digest}_f{index}"


def as_custom_op(fn: FunctionSpec) -> FunctionSpec | None:
    """The same Function as a torch.library.custom_op, or None where custom_op_limit says it
    cannot be one. The forms a custom_op has no choice of are set to its own: setup_context
    style, a `backward` method, and for a Function with `vmap` the generic code style (plain
    writes no register_vmap); a Function's generate_vmap_rule becomes the op's register_vmap."""
    if fn.api == "custom_op":
        return fn
    op = dataclasses.replace(fn, api="custom_op", style="setup_context", backward_method="backward",
                             vmap_rule="generate", code="generic" if fn.vmap else fn.code)
    return op if custom_op_limit(op) is None else None


def with_user_vmap_rule(fn: FunctionSpec) -> FunctionSpec | None:
    """The same Function with a hand-written vmap staticmethod in place of generate_vmap_rule,
    or None where it has no vmap support to replace (vmap=False) or is a custom_op (whose rule
    is register_vmap). Plain-style Functions become generic (plain.py writes no vmap method)."""
    if not fn.vmap or fn.api != "function":
        return None
    return dataclasses.replace(fn, vmap_rule="user", code="generic")


def _has_literal(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


# --- plain data <-> dataclasses ------------------------------------------------------


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """A dataclass's field names (dataclasses.fields is slow; every example's record hashes its spec)."""
    return tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None


#: fields added after specs were first saved, written only where they differ from their default:
#: every spec saved before keeps its JSON, and so its spec_hash (records, databases, file names)
_WRITTEN_WHEN_SET = {(FunctionSpec, "saved_read"): "saved_tensors", (FunctionSpec, "keyword_args"): 0,
                     (FunctionSpec, "keyword_default"): False, (OutputSpec, "listed"): False, (Arg, "listed"): False,
                     (GraphSpec, "batch_shared"): (),
                     (GraphSpec, "compiled_backward"): False, (GraphSpec, "batch_dim"): 0}


def _to_plain(obj: Any) -> Any:
    names = _field_names(type(obj))
    if names is not None:
        return {name: _to_plain(getattr(obj, name)) for name in names
                if _WRITTEN_WHEN_SET.get((type(obj), name), _to_plain) != getattr(obj, name)}
    if isinstance(obj, tuple):
        return {"tuple": [_to_plain(v) for v in obj]} if _is_const_tuple(obj) else [_to_plain(v) for v in obj]
    return obj


def _is_const_tuple(obj: tuple) -> bool:
    # Constants may be tuples (non-tensor arguments); tag them so they come back as tuples.
    return getattr(obj, "_const", False)


class ConstTuple(tuple):
    """A tuple-valued non-tensor constant; tagged in JSON so it round-trips."""

    _const = True

    def __repr__(self) -> str:
        return f"ConstTuple({tuple(self)!r})"


_NESTED = {
    GraphSpec: {"leaves": LeafSpec, "functions": FunctionSpec, "hooks": HookSpec},
    FunctionSpec: {"args": Arg, "outputs": OutputSpec},
    OutputSpec: {"terms": Term},
}
_CONST_FIELDS = {(Arg, "const"), (OutputSpec, "value")}


def _from_plain(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise SpecError(f"{where}={data!r} is invalid: expected an object with fields of {cls.__name__}.")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise SpecError(f"{where}.{unknown[0]} is an unknown field of {cls.__name__}; valid: {sorted(names)}.")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        w = f"{where}.{name}"
        if name in _NESTED.get(cls, {}):
            if not isinstance(value, list):
                raise SpecError(f"{w}={value!r} is invalid: expected a list.")
            kwargs[name] = tuple(_from_plain(_NESTED[cls][name], v, f"{w}[{i}]") for i, v in enumerate(value))
        elif (cls, name) in _CONST_FIELDS:
            kwargs[name] = _const_from_plain(value, w)
        elif isinstance(value, list):
            kwargs[name] = tuple(value)
        else:
            kwargs[name] = value
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise SpecError(f"{where} is invalid: {e}.") from None


def _const_from_plain(value: Any, where: str) -> Any:
    if isinstance(value, dict) and set(value) == {"tuple"}:
        return ConstTuple(_const_from_plain(v, where) for v in value["tuple"])
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise SpecError(f"{where}={value!r} is invalid: constants are None, numbers, strings or tagged tuples.")


def load_spec(path: str) -> GraphSpec:
    """Read a spec file; any problem is one SpecError sentence naming the file."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise SpecError(f"cannot read spec file {path!r} ({e.strerror}); check the path.") from None
    try:
        return GraphSpec.from_json(text)
    except SpecError as e:
        raise SpecError(f"{path}: {e}") from None


__all__ = [
    "APIS", "BATCH_DIMS", "VMAP_RULES", "CUSTOM_OP_NAMESPACE", "as_custom_op", "custom_op_limit", "custom_op_name", "with_user_vmap_rule", "COMPLEX_DTYPES", "COMPLEX_OPS", "DIRTY_RETURNS", "DTYPES", "FORWARD_CODES", "GRAD_MODES", "SAVED_READS", "INPUT_DTYPES", "Arg", "ConstTuple", "FunctionSpec", "GraphSpec", "HookSpec", "LeafSpec", "OutputSpec",
    "SpecError", "Term", "load_spec", "parameter_name", "validate",
]
