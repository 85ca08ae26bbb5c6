"""Dynamo (torch.compile tracing a custom Function): its entries, each beside its predicates.
Those on what Dynamo's ctx makes of needs_input_grad, saved_variables and the marks are in
dynamo_ctx.py; ENTRIES here joins them in, in the registry's order."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import torch

from harness.build import build
from harness.dataflow import Dataflow, saved_mutated_outputs
from harness.known_issues import dynamo_ctx, dynamo_lists
from harness.known_issues.dynamo_ctx import _alias_of, _dirty_outputs, _marks_shifted_by_constants
from harness.known_issues.entry import KnownIssue, error_at, path_family, raised
from harness.known_issues.shared import (
    _DOCUMENTED_BACKWARD_ERROR,
    SECOND_ORDER_DAMAGES,
    _aliasing_output_as_copy,
    _backward_runs,
    _breaks_the_graph_itself,
    _functions_replaced,
    _gradient_reaches,
    _gradient_record_of,
    _held_by,
    _inputs_returned_without_grad,
    _invalid_backward_runs,
    _ref_of,
    _released_late_held_by,
    _returned_as_tuples,
    _second_order_damage,
    _second_order_differs,
    _func_dynamo_gradient_inputs,
    _function_apply_trace,
    _traced_under_func_dynamo,
    _without_errors,
)
from harness.oracles import holders
from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import FunctionSpec, GraphSpec, OutputSpec, SpecError


def _cleared(spec: GraphSpec) -> set[int]:
    """Functions with clear_saved_tensors_on_access. Where Dynamo does not trace one (a user jvp:
    "Unsupported custom jvp"; the same tensor passed twice to a forward that calls
    set_materialize_grads(False), found by HypoFuzz: `nightly`, 2.13.0; a graph break in its forward,
    such as a data-dependent branch, whether an input requires grad or not) the way it then runs it
    reads ctx.saved_tensors twice (dynamo-clear-saved-tensors-with-jvp), on every backend; a traced
    one runs, and the witness, the error itself, tells the two apart."""
    return {n for n, fn in enumerate(spec.functions) if fn.clear_saved_tensors_on_access}


def _generic(fn: FunctionSpec) -> bool:
    """A generic-style autograd.Function, whose class body Dynamo traces. A custom_op's kernel is
    generic too, but Dynamo never traces into it (custom_ops.py wraps it in torch._disable_dynamo)."""
    return fn.code == "generic" and fn.api == "function"


def _all_plain(spec: GraphSpec) -> GraphSpec:
    """Every Function written in the plain style (explicit parameters, literal constants),
    where it can be (a tuple-valued constant output has no plain literal); a hand-written vmap
    rule, which plain.py does not write, becomes generate_vmap_rule."""
    def plain(n: int, fn: FunctionSpec) -> FunctionSpec:
        try:
            candidate = dataclasses.replace(fn, code="plain", vmap_rule="generate")
            GraphSpec(shape=spec.shape, dtype=spec.dtype, leaves=spec.leaves,
                      functions=spec.functions[:n] + (candidate,))
        except SpecError:
            return fn
        return candidate
    return _functions_replaced(spec, plain)


# --- Dynamo --------------------------------------------------------------------------------


def _saved_mutated_outputs(spec: GraphSpec) -> set[str]:
    """Outputs modified in place after the forward that a Function whose backward runs saved and
    whose data the compiled backward does not need: as its own outputs (the generated backward
    unpacks them and reads only their shape, harness/generic.py), or as the input of a nonlinear term
    whose gradient reaches no leaf (it does not require grad, or every Function it flows back through
    ignores it: the backward reads it only for that input's own gradient, which nothing needs, so
    AOT Autograd's traced backward drops it)."""
    as_outputs = saved_mutated_outputs(spec, as_inputs=False)
    requires_grad = Dataflow(spec).requires_grad
    return as_outputs | {r for r in saved_mutated_outputs(spec) - as_outputs
                         if not _gradient_reaches(spec, requires_grad, r)}


def _all_saved_mutated_outputs_not_mutated(spec: GraphSpec) -> GraphSpec:
    """No output that a Function whose backward runs saved is modified in place (the other in-place
    updates stay)."""
    saved = saved_mutated_outputs(spec)
    return dataclasses.replace(spec, mutated_outputs=tuple(r for r in spec.mutated_outputs if r not in saved))


def _version_error_missing(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The run went through the backward where eager (and the math oracle) say torch's
    version-counter error must stop it."""
    return result.status != "error" and any(m.checkpoint == "backward" and m.role == "error" for m in mismatches)


def _saved_outputs_not_mutated(spec: GraphSpec) -> GraphSpec:
    """Those outputs are not modified in place (the other in-place updates stay)."""
    saved = _saved_mutated_outputs(spec)
    return dataclasses.replace(spec, mutated_outputs=tuple(r for r in spec.mutated_outputs if r not in saved))


def _generic_function_with_grad_input(spec: GraphSpec) -> bool:
    flow = Dataflow(spec)
    return any(_generic(fn) and flow.node_exists(n) for n, fn in enumerate(spec.functions))


def _varargs_functions(spec: GraphSpec) -> set[int]:
    """Functions whose forward is forward(*args) or forward(ctx, *args) with a tensor to shift: Dynamo
    binds their inputs shifted. (A generic Function applied with keyword arguments has one named
    parameter per argument instead: harness/generic.py _with_parameters.)"""
    return {n for n, fn in enumerate(spec.functions) if _generic(fn) and fn.tensor_slots and not fn.keyword_args}


def _varargs_function_with_tensor_input(spec: GraphSpec) -> bool:
    return bool(_varargs_functions(spec))


def _generic_function_with_tensor_input(spec: GraphSpec) -> bool:
    """A generic Function with a tensor input, applied with keyword arguments or not (its class
    body reads the spec, an ordinary object, from its enclosing scope either way)."""
    return any(_generic(fn) and fn.tensor_slots for fn in spec.functions)


def _wrong_forward_value_of_varargs_function(spec: GraphSpec, result: RunResult,
                                             mismatches: list[Mismatch]) -> bool:
    """An output of a generic Function differs in value or in what it aliases (an error the
    run met later, a deliberate one included, does not undo what the forward computed), or
    an earlier Function's output that a generic Function modifying an input in place was
    passed as is: with the inputs shifted, the in-place update lands on a neighbour of its
    (cloned) dirty input."""
    shifted = _varargs_functions(spec)
    overwritten = {a.ref for n in shifted for a in spec.functions[n].args
                   if a.ref is not None and not a.clone and any(o.kind == "dirty" for o in spec.functions[n].outputs)}
    return any(
        m.checkpoint in ("forward", "meta:forward") and m.role.startswith(("out:f", "alias:f"))
        and (int(_ref_of(m.role)[1:].split(".")[0]) in shifted or _ref_of(m.role) in overwritten)
        for m in mismatches)


def _single_non_differentiable_outputs(spec: GraphSpec) -> set[int]:
    return {n for n, fn in enumerate(spec.functions)
            if not fn.tuple_output and fn.outputs[0].non_differentiable}


def _single_constant_outputs(spec: GraphSpec, any_tensor_input: bool = False) -> set[int]:
    """Functions with an input that requires grad (Dynamo traces them as the
    autograd_function_apply op) whose forward returns one non-tensor value, not a tuple.
    any_tensor_input: under a torch.func transform, which differentiates every leaf, any tensor input."""
    flow = Dataflow(spec)
    return {n for n, fn in enumerate(spec.functions)
            if not fn.tuple_output and fn.outputs[0].kind == "const"
            and (fn.tensor_slots if any_tensor_input else flow.node_exists(n))}


def _single_constant_outputs_on(path: str) -> Callable[[GraphSpec], set[int]]:
    return lambda spec: _single_constant_outputs(spec, any_tensor_input=path_family(path) == "func+dynamo")


def _constant_iterated(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Dynamo iterated such a value: the TypeError of iterating a number, bool or None; for a
    string, one output per character, so backward(ctx, g) is bound with too many gradients
    (or, had the backward taken them all, the characters came back as a tuple)."""
    error = str(result.error) if (result.status == "error" and result.error_checkpoint == "forward"
                                  and isinstance(result.error, TypeError)) else ""
    for n in _single_constant_outputs_on(result.path)(spec):
        value = spec.functions[n].outputs[0].value
        if not isinstance(value, str):
            if f"'{type(value).__name__}' object is not iterable" in error:
                return True
        elif f"Too many positional arguments: got {len(value) + 1}, expected 2" in error or any(
                m.checkpoint == "forward" and m.role == f"const:f{n}.0" and m.detail.endswith(f"got {tuple(value)!r}")
                for m in mismatches):
            return True
    return False


def _returned_as_views(spec: GraphSpec) -> GraphSpec:
    bad = _inputs_returned_without_grad(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        OutputSpec("view", slot=o.slot) if f"f{n}.{k}" in bad else o for k, o in enumerate(fn.outputs))))


_GRADIENT_CHANGING_HOOKS = ("tensor",)  # harness/run.py: a tensor hook doubles the gradient


def _hooks_on_outputs_used_inside(spec: GraphSpec) -> tuple[int, ...]:
    """Indices of retain_grad and tensor hooks on Function outputs that a later Function reads
    (inside the compiled forward), when a backward runs."""
    flow = Dataflow(spec)
    return tuple(h for h, hook in enumerate(spec.hooks)
                 if spec.backward != "none" and hook.kind in ("retain_grad",) + _GRADIENT_CHANGING_HOOKS
                 and hook.target is not None and hook.target.startswith("f") and flow.edges_into(hook.target))


def _seeing_part_of_the_gradient(spec: GraphSpec) -> frozenset[str]:
    """Values whose recorded gradient can be off: each such hooked output, and for a hook that
    changes the gradient, everything upstream of it (it changes only the outside part)."""
    flow = Dataflow(spec)
    seen: set[str] = set()
    for h in _hooks_on_outputs_used_inside(spec):
        target = spec.hooks[h].target
        seen |= flow.upstream(target) if spec.hooks[h].kind in _GRADIENT_CHANGING_HOOKS else {target}
    return frozenset(seen)


def _gradient_seen_by(spec: GraphSpec, m: Mismatch) -> bool:
    """A gradient-side record of a value that sees only part of its gradient."""
    return _gradient_record_of(spec, _seeing_part_of_the_gradient(spec), m)


def _without_hooks_on_outputs_used_inside(spec: GraphSpec) -> GraphSpec:
    bad = set(_hooks_on_outputs_used_inside(spec))
    return dataclasses.replace(spec, hooks=tuple(h for i, h in enumerate(spec.hooks) if i not in bad))


def _invalid_backward_traced(spec: GraphSpec) -> bool:
    """A Function that returns too few or wrongly shaped gradients on purpose, which Dynamo traces
    (it has a node and does not break the graph itself): Dynamo traces its backward while it
    compiles the forward (AutogradFunctionApplyVariable, rewire_bwd_graph_outputs), also where
    eager's backward never calls it (a partial backward that does not reach it; the
    dynamo audit, spec 82afbef1)."""
    flow = Dataflow(spec)
    through_lost_marks = _nodes_through_lost_marks(spec)
    return any(fn.error in ("grad_count", "grad_shape") and (flow.node_exists(n) or n in through_lost_marks)
               and not _breaks_the_graph_itself(fn) for n, fn in enumerate(spec.functions))


def _nodes_through_lost_marks(spec: GraphSpec) -> set[int]:
    """Functions that have a node under torch.compile only because an output they read (or one it
    was computed from) lost its mark_non_differentiable to the shift of
    dynamo-mark-non-differentiable-index-shifted: with the mark lost, it requires grad (found on
    2.14.1 in a 30-minute dynamo campaign: such a Function's too-few-gradients backward, traced at
    compile time, raised IndexError at forward)."""
    lost, _ = _marks_shifted_by_constants(spec)
    if not lost:
        return set()
    unmarked = _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        dataclasses.replace(o, non_differentiable=False) if f"f{n}.{k}" in lost else o
        for k, o in enumerate(fn.outputs))))
    flow = Dataflow(unmarked)
    return {n for n in range(len(spec.functions)) if flow.node_exists(n)}


#: the func+dynamo paths that run the forward inside a reverse-mode transform (jacfwd and grad_vmap only
#: where eager runs no backward: shared._func_dynamo_gradient_inputs)
_FUNC_DYNAMO_REVERSE_MODE = tuple(f"func.{t}+dynamo" for t in ("grad", "vjp", "jacrev", "vmap_grad", "grad_vmap",
                                                                "jacfwd"))


def _cleared_where_dynamo_stops(spec: GraphSpec, path: str) -> int | None:
    """On a func+dynamo path, the Function with clear_saved_tensors_on_access that Dynamo set out to
    make an autograd_function_apply op of and did not (or inlined, up to a graph break), where its trace ended
    (shared._function_apply_trace): it breaks the graph (a user jvp or vjp, ...) and is generic,
    and Dynamo's eager fallback then reads ctx.saved_tensors twice (seen on 2.13.0; a plain-style
    one runs: tests/func/test_func_known_issues.py)."""
    how = _func_dynamo_gradient_inputs(spec, path)
    if how is None:
        return None
    n = _function_apply_trace(spec, how[0]).stopped_at
    if n is None:
        # or one Dynamo inlines (no input it sees requires grad) whose print or data-dependent branch
        # breaks the graph: the trace ended at the first such forward (a 3-minute func+dynamo campaign's
        # user-vmap-rule twin, generic, raised; the plain original ran: a campaign-cause test)
        n = next((m for m, fn in enumerate(spec.functions) if fn.untraceable in ("print", "data_branch")), None)
    if n is None:
        return None
    fn = spec.functions[n]
    return n if fn.clear_saved_tensors_on_access and _generic(fn) and _breaks_the_graph_itself(fn) else None


def _invalid_backward_traced_under_func(spec: GraphSpec, path: str) -> bool:
    """Such a Function is traced as an autograd_function_apply op inside the transform
    (shared._traced_under_func_dynamo); under vmap only one returning too few gradients, whose
    backward's trace raises before the op's missing vmap rule does (a wrong shape raises later, in
    AOT's compile)."""
    vmapped = path in ("func.vmap_grad+dynamo", "func.grad_vmap+dynamo")
    errors = ("grad_count",) if vmapped else ("grad_count", "grad_shape")
    return any(spec.functions[n].error in errors for n in _traced_under_func_dynamo(spec, path))


def _invalid_backward_checked_differently(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Eager raised its documented error at backward and this path did not raise it there, or
    this path raised it (or compiled autograd's IndexError) somewhere else or under another name."""
    return any(m.role == "error" and (
        "eager raised RuntimeError at backward" in m.detail and _DOCUMENTED_BACKWARD_ERROR.search(m.detail)
        # (under a torch.func transform, its single-level Function: "ApplyTemplateGeneratedBackward")
        or _DOCUMENTED_BACKWARD_ERROR.search(m.detail) and re.search(r"ApplyTemplate(Generated)?Backward", m.detail)
        or m.checkpoint == "forward" and "IndexError at forward: list index out of range" in m.detail
        # a wrong-shaped gradient into a dirty view: AOT's trace of the backward at compile time
        # validates it where the CopySlices node over the view passes it on (eager skips that
        # check: copyslices-skips-gradient-validation); found from that entry's seed
        or m.checkpoint == "forward" and _COPYSLICES_INVALID_GRADIENT.search(m.detail)
        # the same trace, where the wrong-shaped gradient of a dirty view reaches its base's
        # slice before any check: AOT's compile fails expanding it (a 20-minute campaign's 3540a41a)
        or m.checkpoint == "forward" and "BackendCompilerFailed at forward" in m.detail
        and _AOT_EXPAND_OF_WRONG_SHAPE.search(m.detail))
        for m in mismatches)


_AOT_EXPAND_OF_WRONG_SHAPE = re.compile(r"expand: attempting to expand a dimension of length \d+ -> \d+")


_COPYSLICES_INVALID_GRADIENT = re.compile(r"Function torch::autograd::CopySlices returned an invalid gradient "
                                          r"at index \d+ - got \[[\d, ]*\] but expected shape compatible")


def _dirty_sites(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    return tuple((n, k) for n, fn in enumerate(spec.functions) for k, o in enumerate(fn.outputs) if o.kind == "dirty")


def _dirty_sites_with_grad(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    flow = Dataflow(spec)
    return tuple((n, k) for n, fn in enumerate(spec.functions) if flow.node_exists(n)
                 for k, o in enumerate(fn.outputs) if o.kind == "dirty")


_CLASS_ATTRIBUTE = r"Unsupported python_type\(\) call.*AutogradFunctionVariable\(\)"

# Where no input requires grad, Dynamo inlines a Function's forward and passes the ctx first
# unless the call has exactly one argument fewer than forward has parameters
# (torch/_dynamo/variables/misc.py, AutogradFunctionVariable.call_apply): a forward(*args), or
# one applied with a default left out, then gets the ctx (a `Function`) as its first input.
# What it does with it: a torch op given the ctx crashes Dynamo itself; an attribute or an
# operator of the ctx raises; the ctx returned as the output escapes (the harness' check of
# the output's kind, harness/run.py _store_outputs, raises inside the trace).
_CTX_AS_FIRST_INPUT = (r"'AutogradFunctionContextVariable' object has no attribute 'proxy'"
                       r"|AutogradFunctionContextVariable escaped Dynamo-traced region"
                       r"|'Function' object has no attribute|operand type\(s\) for .*'Function'"
                       r"|Function \d+ returned Function for its output \d+, a tensor in its spec")


#: What a Function's forward raises when Dynamo binds its inputs shifted by one (the ctx, or a
#: constant, where the spec has a tensor), in every form seen: Dynamo renders an exception the traced
#: forward raised as a constant (torch 2.13 "ConstantVariable(str: ...)", 2.14 "raised exception
#: E(...)"), or an op given a constant raises a TypeError; the rest is where the shifted value goes
_SHIFTED_INPUTS = (r"^['\"]?((LazyVariableTracker\(realized: )?ConstantVariable\(str: "
                   r"|raised exception \w+\()|index out of range"
                   r"|unsupported operand type\(s\) for .*'NoneType'"
                   r"|argument '\w+' \(position \d+\) must be Tensor, not \w+"
                   r"|" + _CTX_AS_FIRST_INPUT +
                   # an output returned as-is from a shifted input, a constant: the
                   # straight forward's clone of it fails (harness/run.py recording_errors)
                   r"|'(tuple|int|float|bool|str|NoneType)' object has no attribute 'clone'"
                   # under a torch.func transform, a dirty input's in-place op lands
                   # on the shifted input, a tensor the transform captured
                   r"|attempted to call in-place operation \(aten::\w+\.\w+\) that would mutate "
                   r"a captured Tensor"
                   # under vmap, a shifted input of another rank meets its batch dim's move
                   r"|number of dimensions in the tensor input does not match the length of "
                   r"the desired ordering of dimensions"
                   # or the in-place op of a dirty input lands on a shifted leaf (or leaf view)
                   r"|a (view of a )?leaf Variable that requires grad is being used in an in-place operation"
                   # or a shifted constant comes back where the spec's output is a tensor
                   r"|^Function \d+ returned \w+ for its output \d+, a tensor in its spec$"
                   # or a tensor lands where a list was passed (Arg.listed): the forward's
                   # `listed[0]` indexes that tensor, which fails on a 0-dim or empty one
                   r"|^invalid index of a 0-dim tensor|^index 0 is out of bounds for dimension 0 with size 0")


def _anything(spec: GraphSpec, m: Mismatch) -> bool:
    return True


def _zero_dim_float64_mutations(spec: GraphSpec) -> bool:
    """A 0-dim float64 graph with an in-place op (a dirty output, or an output the forward
    mutates): Dynamo gives a 0-dim float64 input of a frame it compiles a float symbol and drops
    the in-place op on it. Which tensors are frame inputs Dynamo decides (the graph's leaves, and
    every input of a Function whose forward frame it compiles on its own after a graph break),
    so this is the structure the bug needs; the witness sees the op lost."""
    return (spec.dtype == "float64" and tuple(spec.shape) == ()
            and (bool(spec.mutated_outputs) or any(o.kind == "dirty" for fn in spec.functions for o in fn.outputs)))


def _dirty_output_kept_its_old_value(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """A dirty output whose forward value differs from eager's holds the value its input had
    before the in-place op (a leaf's, or the recorded value of the Function output it was
    computed from): the op was dropped, where it changes the value (coefficient not 1)."""
    if not _zero_dim_float64_mutations(spec):
        return False
    wrong = {_ref_of(m.role) for m in mismatches if m.checkpoint == "forward" and m.role.startswith("out:")}
    outs = result.tensors.get("forward", {})
    leaves = None
    for ref, (arg, coeff) in _dirty_outputs(spec).items():
        source = arg.ref
        if ref not in wrong or coeff == 1.0 or outs.get(f"out:{ref}") is None or source is None:
            continue
        if source.startswith("f"):
            # recorded after the forward: the old value only where the op ran on a clone of it
            # (modified itself, it is the dirty output and holds the same value whatever happened)
            before = outs.get(f"out:{source}") if arg.clone else None
        else:
            # the leaves' values, made again from the spec's seed
            leaves = leaves if leaves is not None else build(spec).make_leaves()
            i, _, view = source[1:].rstrip("]").partition("[")
            before = leaves[int(i)] if not view else leaves[int(i)][int(view)]
        if before is not None and torch.equal(outs[f"out:{ref}"].detach().cpu(), before.detach().cpu()):
            return True
    return False


def _lost_mutations_and_what_follows(spec: GraphSpec, m: Mismatch) -> bool:
    """The values of the dirty outputs and of what is computed from them; at backward, the
    gradients of the leaves those values were computed from (a nonlinear op on an old value
    gives another derivative)."""
    flow = Dataflow(spec)
    tainted = flow.downstream(set(_dirty_outputs(spec)))
    if m.checkpoint == "forward":
        return m.role.startswith("out:") and _ref_of(m.role) in tainted
    upstream = frozenset().union(*(flow.upstream(r) for r in tainted))
    return m.checkpoint in ("backward", "double_backward") and m.role.startswith(
        ("grad:", "grad2:", "agrad:", "dgrad:")) and _ref_of(m.role) in upstream


def _shape_one(spec: GraphSpec) -> GraphSpec:
    """The same graph on shape (1,): the tensors are no longer 0-dim."""
    return dataclasses.replace(spec, shape=(1,))


#: the holders of dynamo-trace-state-cycle's cycles (harness/oracles/holders.py)
_TRACE_STATE = (holders.DYNAMO_CTX, holders.TRACE_STATE)


ENTRIES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="dynamo-function-class-attribute",
        title=("torch.compile: reading a plain class attribute of a custom autograd.Function (a "
               "flag, a config object) fails with the graph break 'Unsupported python_type() call', "
               "whose own hint calls it a Dynamo bug"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_function_class_attribute.py",
        upstream=(),
        related=(
            "pytorch/pytorch#180834 (closed: the same GetAttrVariable gap for setup_context)",
            "pytorch/pytorch#196058 (open pull request: hasattr, hashing and issubclass on autograd.Function classes)",
        ),
        kind="limitation",
        trigger=lambda spec: any(_generic(fn) for fn in spec.functions),
        witness=raised("forward", _CLASS_ATTRIBUTE),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_all_plain,
    ),
    KnownIssue(
        id="dynamo-function-class-attribute-backward",
        title=("The backward side of dynamo-function-class-attribute: compiled autograd handing its "
               "graph to torch.compile traces each Function's backward, which reads class attributes"),
        first=(2, 13, 0), last=None,
        paths=("compiled:eager", "compiled:aot_eager", "compiled:inductor"),
        reproducer="dynamo_function_class_attribute.py",
        upstream=(),
        related=(
            "pytorch/pytorch#180834 (closed: the same GetAttrVariable gap for setup_context)",
            "pytorch/pytorch#196058 (open pull request: hasattr, hashing and issubclass on autograd.Function classes)",
        ),
        kind="limitation",
        trigger=lambda spec: spec.backward != "none" and _generic_function_with_grad_input(spec),
        witness=raised("backward", _CLASS_ATTRIBUTE),
        damage=error_at("backward"),
        damages="the error at backward",
        workaround=_all_plain,
    ),
    KnownIssue(
        id="dynamo-function-varargs-forward",
        title=("torch.compile binds the inputs of a custom Function whose forward takes *args "
               "shifted by one: forward(*args) (setup_context style) sees the ctx as its first input "
               "and computes with the wrong inputs (wrong values, or AttributeError on the ctx); "
               "forward(ctx, *args) reads past its inputs (IndexError) or a non-tensor argument "
               "where a tensor was passed (TypeError)"),
        first=(2, 13, 0), last=(2, 14, 1),  # its reproducer passes on 2.15.0
        paths=("dynamo", "func+dynamo"),
        reproducer="dynamo_function_varargs_forward.py",
        upstream=(),
        related=("pytorch/pytorch#137809 (the closed 2024 pull request whose heuristic binds forward(*args))",),
        kind="limitation",
        trigger=_varargs_function_with_tensor_input,
        # What the shift breaks first varies with the graph (an input past the end, the ctx
        # or a constant where a tensor was passed, an output that is then no tensor); all of
        # it is an exception the traced forward raised, which Dynamo renders as a constant
        # (or a TypeError of an op given a constant), where eager's forward raised nothing.
        # (torch 2.13 renders it "ConstantVariable(str: ...)", 2.14 "raised exception E(...)").
        # func.jvp+dynamo runs its forward inside forward AD: the error is at forward_ad there.
        witness=raised(("forward", "forward_ad"), _SHIFTED_INPUTS),
        damage=error_at("forward", "forward_ad"),
        damages="the error at forward (at forward_ad under func.jvp+dynamo)",
        workaround=_all_plain,
    ),
    KnownIssue(
        id="dynamo-unread-saved-output-unchecked",
        title=("torch.compile with an AOT Autograd backend: a custom Function saves a tensor whose values its "
               "backward does not need (its output, unpacked without reading its values; or an input whose "
               "gradient nothing needs, read only for that input's own gradient: it does not require grad, or "
               "the Functions it came from ignore that gradient), and the caller modifies that tensor "
               "in place before backward: eager raises the version-counter error, the compiled run does not (AOT "
               "Autograd keeps no data its traced backward does not read, so nothing is checked); the gradients "
               "are right"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),  # backend eager: dynamo-eager-saved-tensors-unchecked
        reproducer="dynamo_unread_saved_output_unchecked.py",
        upstream=(),
        related=(),
        kind="missing error",
        trigger=lambda spec: bool(_saved_mutated_outputs(spec)),
        witness=_version_error_missing,
        damage=error_at("backward"),
        damages="the missing error at backward (compared with eager's and the math oracle's)",
        workaround=_saved_outputs_not_mutated,
    ),
    KnownIssue(
        id="dynamo-eager-saved-tensors-unchecked",
        title=("torch.compile(backend='eager') of a custom Function (traced into autograd_function_apply): the "
               "tensors it saves for backward are never version-checked, so when the caller modifies one in place "
               "before backward, eager raises the version-counter error and the compiled run silently computes "
               "the gradient from the modified values"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:eager",),  # the AOT backends check what they keep: dynamo-unread-saved-output-unchecked
        reproducer="dynamo_eager_saved_tensors_unchecked.py",
        upstream=(),  # related, not the same: #197887 (Inductor, a saved view of a graph input)
        kind="silent wrong result",
        trigger=lambda spec: bool(saved_mutated_outputs(spec)),
        witness=_version_error_missing,
        damage=error_at("backward"),
        # (the harness's eager raises, so the gradient the path computed has no reference to differ from)
        damages="the missing error at backward (compared with eager's and the math oracle's)",
        workaround=_all_saved_mutated_outputs_not_mutated,
    ),
    KnownIssue(
        id="dynamo-function-varargs-forward-values",
        title=("The wrong-value side of dynamo-function-varargs-forward: a Function whose "
               "forward(*args) reads shifted inputs returns wrong outputs without an error"),
        first=(2, 13, 0), last=(2, 14, 1),  # its reproducer passes on 2.15.0
        paths=("dynamo", "func+dynamo"),
        reproducer="dynamo_function_varargs_forward.py",
        upstream=(),
        related=("pytorch/pytorch#137809 (the closed 2024 pull request whose heuristic binds forward(*args))",),
        kind="silent wrong result",
        trigger=_varargs_function_with_tensor_input,
        witness=_wrong_forward_value_of_varargs_function,
        damage=_anything,
        damages="every value: the forward computes with shifted inputs, so all that follows differs",
        workaround=_all_plain,
    ),
    KnownIssue(
        id="dynamo-single-non-differentiable-output",
        title=("torch.compile of a custom Function whose forward returns one tensor (not a tuple) marked "
               "with ctx.mark_non_differentiable fails inside Dynamo with 'AssertionError: Expected fwd_out "
               "to be a BaseListVariable', with fullgraph=True and False alike; returning (out,) compiles"),
        first=(2, 13, 0), last=None,
        paths=("dynamo", *_FUNC_DYNAMO_REVERSE_MODE),
        reproducer="dynamo_single_non_differentiable_output.py",
        upstream=("pytorch/pytorch#186366 (a closed pull request with this fix and its test, merge state not shown)",),
        related=("pytorch/pytorch#129845 (open umbrella)",),
        kind="crash",
        trigger=lambda spec: bool(_single_non_differentiable_outputs(spec)),
        # inside a reverse-mode transform, where Dynamo makes the Function an autograd_function_apply op
        path_triggers={p: (lambda p: lambda spec: bool(_single_non_differentiable_outputs(spec).intersection(
            _traced_under_func_dynamo(spec, p))))(p) for p in _FUNC_DYNAMO_REVERSE_MODE},
        witness=raised("forward", r"Expected fwd_out to be a BaseListVariable"),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_returned_as_tuples(_single_non_differentiable_outputs),
    ),
    KnownIssue(
        id="dynamo-function-single-constant-output",
        title=("torch.compile of a custom Function with an input that requires grad, whose forward returns one "
               "non-tensor value (not a tuple): Dynamo's fwd_trace_helper (torch/_functorch/autograd_function.py) "
               "iterates it, so an int, float, bool or None raises \"TypeError: '<type>' object is not iterable\" "
               "and a string is split into one output per character; returning (value,) compiles"),
        first=(2, 13, 0), last=None,
        paths=("dynamo", "func+dynamo"),
        reproducer="dynamo_function_single_constant_output.py",
        upstream=(),
        related=("pytorch/pytorch#144142 (closed: a non-tensor output in a tuple)",),
        kind="limitation",
        trigger=lambda spec: bool(_single_constant_outputs(spec)),
        path_triggers={"func+dynamo": lambda spec: bool(_single_constant_outputs(spec, any_tensor_input=True))},
        witness=_constant_iterated,
        damage=lambda spec, m: error_at("forward")(spec, m) or (
            m.checkpoint == "forward" and m.role in {f"const:f{n}.0" for n in _single_constant_outputs_on(m.path)(spec)}),
        damages="the error at forward (or the constant output, split into characters)",
        workaround=_returned_as_tuples(lambda spec: _single_constant_outputs(spec, any_tensor_input=True)),
    ),
    KnownIssue(
        id="dynamo-input-returned-as-is-not-a-view",
        title=("torch.compile: a custom Function returning an input as-is, none of whose inputs requires "
               "grad, returns the input tensor itself; eager returns a view of it (custom_function.cpp, "
               "_view_as_self_with_no_grad)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_input_returned_as_is_not_a_view.py",
        upstream=(),
        related=("pytorch/pytorch#102970 (closed: an input returned as-is with requires_grad)",),
        kind="wrong metadata",
        trigger=lambda spec: bool(_inputs_returned_without_grad(spec)),
        witness=lambda spec, result, ms: any(
            _alias_of(m) in _inputs_returned_without_grad(spec) and m.detail.startswith("expected 'view of ")
            and "got 'is " in m.detail for m in ms),
        damage=lambda spec, m: _alias_of(m) in _inputs_returned_without_grad(spec),
        damages="the alias relation (meta:forward alias:*) of those outputs",
        workaround=_returned_as_views,
    ),
    KnownIssue(
        id="dynamo-hook-on-output-used-inside",
        title=("torch.compile with an AOT Autograd backend differentiates the compiled region as one node: "
               "a hook registered on an output that the region also uses "
               "inside sees only the gradient from outside, so retain_grad gives a partial .grad and a "
               "hook that changes the gradient changes only that part"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="dynamo_hook_on_output_used_inside.py",
        upstream=(
            "pytorch/pytorch#91468 (open)",
            "pytorch/pytorch#146212 (closed: retain_grad ignored under aot_eager)",
        ),
        related=(),
        kind="silent wrong result",
        trigger=lambda spec: bool(_hooks_on_outputs_used_inside(spec)),
        witness=lambda spec, result, ms: any(m.checkpoint == "backward" and _gradient_seen_by(spec, m) for m in ms),
        damage=_gradient_seen_by,
        damages=("at backward, the retained grad of each such hooked output; for a tensor hook, the gradients, "
                 "retained grads and hook records of every value upstream of it (and their strides)"),
        workaround=_without_hooks_on_outputs_used_inside,
    ),
    # what Dynamo's ctx makes of needs_input_grad, saved_variables and the marks (dynamo_ctx.py)
    *dynamo_ctx.ENTRIES,
    KnownIssue(
        id="dynamo-eager-function-backward-not-differentiable",
        title=("torch.compile(backend='eager') of a custom Function (traced into autograd_function_apply): "
               "create_graph=True gives first-order gradients that do not require grad, so the second-order "
               "gradient through the Function's backward is silently lost (None, or wrong where built-in "
               "ops contribute); eager differentiates the backward, the AOT backends refuse double backward"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:eager",),  # aot_eager and inductor: unsupported (AOT's backward is once-differentiable)
        reproducer="dynamo_eager_function_backward_not_differentiable.py",
        upstream=(),
        related=(
            "pytorch/pytorch#91469 (open: double backward silently wrong under torch.compile; the AOT backends now raise)",
        ),
        kind="silent wrong result",
        trigger=lambda spec: spec.backward == "double" and any(
            _backward_runs(spec, n) for n in range(len(spec.functions))),
        witness=_second_order_differs,
        damage=_second_order_damage,
        damages=SECOND_ORDER_DAMAGES,
        workaround=lambda spec: dataclasses.replace(spec, backward="backward"),
        # the trigger holds for every Function whose backward runs under create_graph, and the
        # witness (a second-order gradient differs) is seen only in such a run
        any_function=True,
    ),
    KnownIssue(
        id="dynamo-trace-state-cycle",
        title=("torch.compile: Dynamo's trace state keeps real tensors in reference cycles that only a full "
               "gc.collect() frees: the abandoned trace of a frame it skipped after a graph break inside an "
               "enumerate loop (reproduced standalone), and SideEffects of a finished trace holding a "
               "Function's ctx (the holder of ca-dynamo-function-ctx-cycle; seen here without a standalone "
               "reproducer, with ctx attributes set in forward), or the real input a VariableTracker's lazy "
               "cache keeps"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_skipped_frame_tracer_cycle.py",
        upstream=(),
        related=(
            "pytorch/pytorch#169642 (closed pull request: clean up graphs of failed tracer outputs)",
            "pytorch/pytorch#197567 (open pull request: exception tracebacks pin frames)",
            "pytorch/pytorch#195866 (the SideEffects cycle of the second form)",
        ),
        kind="leak",
        # every dynamo run traces the graph's Functions; a cycle is this bug's only where the
        # tensor dies once the ctx Dynamo keeps, or the trace's state, lets go of it
        # (harness/oracles/holders.py): a cycle the graph makes itself fails
        trigger=lambda spec: bool(spec.functions),
        witness=_held_by(*_TRACE_STATE),
        damage=_released_late_held_by(*_TRACE_STATE),
        damages=("drop_all: 'freed only by gc.collect()' (cycles, never leaks), and the use counts this "
                 "keeps up at drop_outputs, of the tensors that a ctx Dynamo keeps or a trace's state holds"),
        workaround=lambda spec: spec,  # no spec avoids Dynamo's own trace state
        any_function=True,
    ),
    KnownIssue(
        id="dynamo-function-backward-checked-differently",
        title=("torch.compile validates a custom Function's backward results differently from eager: a "
               "gradient for a non-tensor input (or a missing one) passes silently, a missing tensor "
               "gradient raises IndexError at compile time, a wrongly shaped one raises at compile time "
               "under AOT backends and names the node ApplyTemplateBackward"),
        first=(2, 13, 0), last=None,
        paths=("dynamo", *_FUNC_DYNAMO_REVERSE_MODE),
        reproducer="dynamo_function_backward_checked_differently.py",
        upstream=(),
        related=(),
        kind="missing error",
        trigger=lambda spec: _invalid_backward_runs(spec) or _invalid_backward_traced(spec),
        path_triggers={p: (lambda p: lambda spec: _invalid_backward_traced_under_func(spec, p))(p)
                       for p in _FUNC_DYNAMO_REVERSE_MODE},
        witness=_invalid_backward_checked_differently,
        damage=lambda spec, m: m.role == "error",
        damages="the error (raised elsewhere, under another name, or not at all)",
        workaround=_without_errors(lambda n, fn: fn.error is not None),
    ),
    KnownIssue(
        id="dynamo-mark-dirty-inplace-result",
        title=("torch.compile: a custom Function that marks an input dirty and returns the in-place op's "
               "result (`return a.mul_(2)`, which is `a`) gets the graph break 'mark_dirty input not "
               "returned' when an input requires grad; `a.mul_(2); return a` compiles"),
        first=(2, 13, 0), last=None,
        paths=("dynamo", "func+dynamo"),
        reproducer="dynamo_mark_dirty_inplace_result.py",
        upstream=(),
        related=("pytorch/pytorch#184267 (the closed pull request that added this graph break; not a report of it)",),
        kind="limitation",
        trigger=lambda spec: bool(_dirty_sites_with_grad(spec)),
        # a torch.func transform differentiates (or batches) every leaf, whatever requires_grad says
        path_triggers={"func+dynamo": lambda spec: bool(_dirty_sites(spec))},
        witness=raised("forward", r"mark_dirty input not returned"),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=lambda spec: _aliasing_output_as_copy(spec, _dirty_sites),  # every path's sites
    ),
    KnownIssue(
        id="dynamo-function-closure-object",
        title=("torch.compile: a custom Function whose forward reads an ordinary object from its "
               "enclosing scope fails, when an input requires grad, with the graph break 'Unexpected "
               "type in sourceless builder', whose own hint calls it a Dynamo bug"),
        first=(2, 13, 0), last=None,
        paths=("dynamo", "func+dynamo"),
        reproducer="dynamo_function_closure_object.py",
        upstream=(),
        related=(
            "pytorch/pytorch#154009 (closed: SourcelessBuilder cannot wrap a user dataclass)",
            "pytorch/pytorch#118394 (closed: graph break on a tensor freevar in forward)",
        ),
        kind="limitation",
        trigger=_generic_function_with_grad_input,
        # a torch.func transform differentiates (or batches) every leaf it is given, whatever
        # requires_grad says (harness/paths/func.py): any tensor input
        path_triggers={"func+dynamo": _generic_function_with_tensor_input},
        witness=raised("forward", r"Unexpected type in sourceless builder"),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_all_plain,
    ),
    KnownIssue(
        id="dynamo-zero-dim-float64-input-mutation-lost",
        title=("torch.compile (AOT backends) drops an in-place op on a 0-dim float64 tensor that is an input "
               "of the compiled frame, silently, fullgraph=True or not: Dynamo gives the input a float symbol "
               "(its .item()), the tensorify pass restarts the analysis and the retraced graph has no in-place "
               "op. The harness meets it in the forward frame Dynamo compiles on its own for a Function that "
               "breaks the graph at ctx.mark_dirty (no input requires grad): the dirty output keeps its old value"),
        first=(2, 13, 0), last=(2, 13, 0),  # 2.14.1 and 2.15.0 keep the mutation
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="dynamo_zero_dim_float64_input_mutation_lost.py",
        upstream=(),
        related=(
            "pytorch/pytorch#179395 (closed pull request, probably the fix: tensorify of method-form in-place ops)",
        ),
        kind="silent wrong result",
        trigger=_zero_dim_float64_mutations,
        witness=_dirty_output_kept_its_old_value,
        damage=_lost_mutations_and_what_follows,
        damages=("forward values (out:) of the dirty outputs and of what is computed from them; at backward, the "
                 "gradients of the leaves those values come from"),
        workaround=_shape_one,
    ),
    KnownIssue(
        id="dynamo-clear-saved-tensors-with-jvp",
        title=("torch.compile (every backend) of a custom Function with clear_saved_tensors_on_access=True "
               "that Dynamo does not trace (a user jvp; the same tensor passed twice to a forward calling "
               "set_materialize_grads(False); a graph break in its forward, such as a data-dependent branch, "
               "with or without an input that requires grad) raises InternalTorchDynamoError at forward "
               "('saved_tensors can only be accessed once when clear_saved_tensors_on_access=True'), with no "
               "forward AD running; eager runs it, and so does torch.compile where Dynamo traces the "
               "Function, or without the flag"),
        first=(2, 13, 0), last=None,  # the flag is new in 2.13; 2.14.1 and 2.15.0 not run
        # the same error under backends eager and inductor (its reproducer with them, 2.13.0; a 25-minute
        # eager,dynamo:eager,dynamo:inductor campaign met it on both)
        paths=("dynamo", *_FUNC_DYNAMO_REVERSE_MODE),
        reproducer="dynamo_clear_saved_tensors_with_jvp.py",
        upstream=(),
        related=("pytorch/pytorch#173833 (the closed pull request that added clear_saved_tensors_on_access)",),
        kind="crash",
        trigger=lambda spec: bool(_cleared(spec)),
        path_triggers={p: (lambda p: lambda spec: _cleared_where_dynamo_stops(spec, p) is not None)(p)
                       for p in _FUNC_DYNAMO_REVERSE_MODE},
        # at backward where the Function's vjp (not backward) broke the graph: the fallback's backward
        # reads them twice (a 20-minute campaign's twin b405a987)
        witness=raised(("forward", "backward"),
                       r"saved_tensors can only be accessed once when clear_saved_tensors_on_access", RuntimeError),
        damage=error_at("forward", "backward"),
        damages="the error at forward (at backward, where a vjp broke the graph)",
        workaround=lambda spec: dataclasses.replace(spec, functions=tuple(
            dataclasses.replace(fn, clear_saved_tensors_on_access=False) if n in _cleared(spec)
            or n in {_cleared_where_dynamo_stops(spec, p) for p in _FUNC_DYNAMO_REVERSE_MODE} else fn
            for n, fn in enumerate(spec.functions))),
    ),
    KnownIssue(
        id="dynamo-eager-apply-template-cycle",
        title=("torch.compile(backend='eager') of a custom Function that saves tensors: the "
               "autograd_function_apply op Dynamo traces it into runs as is, and keeps the saved values in the "
               "closure of the ApplyTemplate Function class it makes per call (a class is always in a reference "
               "cycle), outside autograd's saved variables: they outlive the backward and, once every reference "
               "is dropped, die only under gc.collect()"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:eager",),  # the AOT backends trace through the op: it never runs
        reproducer="dynamo_eager_apply_template_cycle.py",
        upstream=(),
        kind="leak",
        # any Function Dynamo traces; the holder is told apart: a cycle is this bug's only where
        # emptying that closure's saved_values frees the tensor (harness/oracles/holders.py)
        trigger=lambda spec: bool(spec.functions),
        witness=_held_by(holders.APPLY_TEMPLATE),
        damage=_released_late_held_by(holders.APPLY_TEMPLATE),
        damages=("drop_all: 'freed only by gc.collect()' (cycles, never leaks), and the use counts this keeps "
                 "up at drop_outputs, of the tensors those saved values hold"),
        workaround=lambda spec: spec,  # every traced Function: no spec avoids it
        any_function=True,
    ),
    KnownIssue(
        id="dynamo-function-default-arguments-not-filled",
        title=("torch.compile of a setup_context-style custom Function applied with a defaulted forward parameter "
               "left out: eager's Function.apply fills the defaults in (bind_default_args), Dynamo does not. A "
               "keyword argument after the parameter left out raises InternalTorchDynamoError \"TypeError: "
               "forward() missing required argument\" (AutogradFunctionVariable._resolve_kwargs, with "
               "fullgraph=False too); trailing defaults left out leave setup_context's inputs short, which raises "
               "under fullgraph=True; where no input requires grad (the inputs inside torch.func transforms), Dynamo "
               "inlines forward with the ctx as its first input (AutogradFunctionVariable.call_apply counts the "
               "arguments against forward's parameters), so the Function computes with, or returns, the ctx, and "
               "every later input comes one place late (it computes on the wrong values, with no error)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo", "func+dynamo"),
        reproducer="dynamo_function_default_arguments_not_filled.py",
        upstream=(),
        related=("pytorch/pytorch#182205 (closed pull request: keyword arguments to Function.apply, whose "
                 "resolution in Dynamo this is)",),
        kind="crash",
        trigger=lambda spec: any(fn.keyword_default for fn in spec.functions),
        # (the last: where no input requires grad, forward gets the ctx as its first input)
        # (and what the shifted inputs then break: a view output, `a2.view_as(a2)`, of an int constant)
        witness=raised("forward", r"missing required argument|not enough values to unpack|" + _SHIFTED_INPUTS),
        damage=error_at("forward"),
        damages="the error at forward",
        # the default passed by keyword, as the call's other keyword arguments are
        workaround=lambda spec: _functions_replaced(
            spec, lambda n, fn: dataclasses.replace(fn, keyword_default=False) if fn.keyword_default else fn),
    ),
    # a tensor in a list, argument or output, under Dynamo (dynamo_lists.py)
    *dynamo_lists.ENTRIES,
)
