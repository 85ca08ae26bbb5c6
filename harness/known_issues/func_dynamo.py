"""torch.compile of a torch.func transform: the bugs only the func+dynamo paths have, each entry
beside its predicates. func.py joins them into the torch.func family's ENTRIES, where they stand
in the registry's order."""

from __future__ import annotations

import dataclasses
import re

from harness.dataflow import Dataflow, differentiable, differentiated_leaves, reads, version_error_expected
from harness.known_issues.entry import KnownIssue, damaged_without_error, error_at, raised, torch_release
from harness.known_issues.shared import (
    _DOCUMENTED_BACKWARD_ERROR,
    _aliasing_output_as_copy,
    _eager_backward_runs,
    _func_dynamo_gradient_inputs,
    _function_apply_trace,
    _functions_replaced,
    _gradient_reaches,
    _invalid_backward_runs,
    _ref_of,
    _traced_under_func_dynamo,
    _version_error_not_raised,
    _without_errors,
)
from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import GraphSpec

def _dirty_clones(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    """(function, output) of each output a Function modifies in place (mark_dirty) whose argument is
    a clone the forward makes: made inside the compiled function, so AOT Autograd functionalizes it."""
    return tuple((n, k) for n, fn in enumerate(spec.functions) for k, o in enumerate(fn.outputs)
                 if o.kind == "dirty" and fn.args[o.slot].clone)


def _after_dirty_clones(spec: GraphSpec) -> frozenset[str]:
    return Dataflow(spec).downstream({f"f{n}.{k}" for n, k in _dirty_clones(spec)})


def _dirty_clone_value_lost(spec: GraphSpec, m: Mismatch) -> bool:
    """The forward values of those outputs and of what is computed from them, and the gradients
    of the leaves behind any Function that read them (its backward sees them)."""
    after = _after_dirty_clones(spec)
    if m.checkpoint in ("forward", "meta:forward"):
        return m.role.startswith(("out:", "const:")) and _ref_of(m.role) in after
    if m.checkpoint in ("backward", "meta:backward", "double_backward"):
        flow = Dataflow(spec)
        readers = {n for n, fn in enumerate(spec.functions) if any(a.ref in after for a in fn.args)}
        behind = frozenset().union(*(flow.upstream(a.ref) for n in readers for a in spec.functions[n].args
                                     if a.ref is not None))
        role = m.role.removeprefix("stride:")
        return role.startswith(("grad:", "agrad:", "grad2:", "dgrad:", "retained:")) and _ref_of(role) in behind
    return False


def _side_effect_functions_on_transformed_tensors(spec: GraphSpec) -> set[int]:
    """Functions with a Python side effect in their forward (`untraceable="side_effect"`) that
    receive a tensor computed inside a backward-side transform from its inputs (a view of a
    leaf, a clone, another Function's output), as harness/paths/func.py runs them: the leaves
    that require grad are the transform's inputs where eager runs a backward, else every float
    leaf (the forward under func.vjp). Torch 2.15 also fails on such an input passed as is."""

    primals = ({f"x{i}" for i in differentiated_leaves(spec)} if _eager_backward_runs(spec)
               else {f"x{i}" for i, leaf in enumerate(spec.leaves) if leaf.dtype is None})
    computed = {f"x{i}[{j}]" for i, leaf in enumerate(spec.leaves) if f"x{i}" in primals for j in range(leaf.views)}
    found = set()
    for n, fn in enumerate(spec.functions):
        as_is = any(a.ref in primals and not a.clone for a in fn.args)
        received = any(a.ref in computed or a.ref in primals and a.clone for a in fn.args)
        if fn.untraceable == "side_effect" and (received or as_is and torch_release() >= (2, 15, 0)):
            found.add(n)
        if received or as_is:  # the transform wraps every output of a Function applied to its tensors
            computed |= {f"f{n}.{k}" for k in fn.tensor_outputs}
    return found


def _without_side_effects(spec: GraphSpec) -> GraphSpec:
    """Those Functions' forwards without their side effect."""
    found = _side_effect_functions_on_transformed_tensors(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, untraceable="none") if n in found else fn)


def _gapped_primals(spec: GraphSpec) -> set[int]:
    """Float leaves (func.jvp gives each a contiguous tangent, BuiltGraph.leaf_tangents) built with
    gaps: layout "strided" takes every other element of the last dim of a tensor twice as wide
    (build._leaf_tensor), so the leaf's storage holds elements it does not use, whatever its
    shape: a last dim of 1 too (shape (1,), stride (2,) trips it on 2.13.0, 2.14.1, 2.15.0,
    while a transposed or as_strided leaf over exactly its own elements does not). Not an
    empty leaf, nor a 0-dim one (build makes it contiguous)."""
    found = set()
    for i, leaf in enumerate(spec.leaves):
        shape = ((leaf.views,) if leaf.views else ()) + tuple(spec.shape)
        if leaf.dtype is None and leaf.layout == "strided" and shape and 0 not in shape:
            found.add(i)
    return found


def _view_of_gapped_primal(spec: GraphSpec) -> bool:
    """Inside func.jvp a view of a gapped primal is used: one of the leaf's own views
    (`x<i>[<j>]`) that a Function reads or that is cloned, or a Function output that is a view
    of the leaf (under torch.compile the Function's forward is inlined; an output returned as
    is stands for its input). The runner makes every view of a leaf (run.forward), and from
    2.14.1 Dynamo's fake-tensor run of that indexing asserts already, whether a Function reads
    the view or not (a spec of the final 2.14.1 campaign: unread views of two gapped leaves);
    a gapped leaf with views is therefore enough."""
    gapped = _gapped_primals(spec)
    if any(spec.leaves[i].views for i in gapped):
        return True
    values = {f"x{i}" for i in gapped}
    for n, fn in enumerate(spec.functions):
        for k, o in enumerate(fn.outputs):
            arg = fn.args[o.slot] if o.kind in ("view", "input") else None
            if arg is None or arg.clone or arg.ref not in values:
                continue
            if o.kind == "view":
                return True
            values.add(f"f{n}.{k}")
    return False


def _gapped_primals_contiguous(spec: GraphSpec) -> GraphSpec:
    gapped = _gapped_primals(spec)
    return dataclasses.replace(spec, leaves=tuple(
        dataclasses.replace(leaf, layout="contiguous") if i in gapped else leaf for i, leaf in enumerate(spec.leaves)))


def _backward_error_not_raised(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Eager raised autograd's documented error for a Function's invalid backward results (or
    the version-counter error for a saved output modified in place), and this path raised
    nothing: the backward was not called, the Function's saved tensors not used."""
    return _version_error_not_raised(result, mismatches) or result.status != "error" and any(
        m.role == "error" and m.checkpoint == "backward"
        and "eager raised RuntimeError at backward" in m.detail and _DOCUMENTED_BACKWARD_ERROR.search(m.detail)
        for m in mismatches)


def _outputs_reading_listed_arguments(spec: GraphSpec) -> dict[str, frozenset[str]]:
    """Each output computed from a tensor passed in a list (Arg.listed), with those tensors' refs:
    eager's Function gives such a tensor no tangent and no gradient (its rules see no input
    there), the transform over the inlined forward differentiates through it."""
    found = {}
    for n, fn in enumerate(spec.functions):
        for k, o in enumerate(fn.outputs):
            refs = frozenset(fn.args[s].ref for s in fn.listed_slots if reads(o.kind, o, s))
            if refs:
                found[f"f{n}.{k}"] = refs
    return found


def _untracked_by_the_rules(spec: GraphSpec) -> frozenset[str]:
    """The outputs to which eager's Function gives no tangent and no gradient path, and the
    transform over the inlined forward does: those marked non-differentiable, those returned in a
    list (OutputSpec.listed: torch's apply does not wrap them), and those computed from a tensor
    passed in a list."""
    return spec.non_differentiable_refs() | spec.listed_refs() | _outputs_reading_listed_arguments(spec).keys()


def _rules_drop_visible(spec: GraphSpec) -> bool:
    """Where torch.compile dropping a Function's own rules under a transform shows: a backward
    that would raise (eager runs a backward), or an output the rules leave untracked, which the
    transform then differentiates through (the generated rules are otherwise true derivatives)."""
    return (_eager_backward_runs(spec) and (_invalid_backward_runs(spec) or version_error_expected(spec))
            or bool(_untracked_by_the_rules(spec)))


def _through_unmarked_outputs(spec: GraphSpec, m: Mismatch) -> bool:
    """A tangent of an output the rules leave untracked (_untracked_by_the_rules) or of a value
    computed from one, or the gradient of a leaf it was computed from (through a listed tensor
    too): what differentiating through the unmarked output changes."""
    flow = Dataflow(spec)
    listed = _outputs_reading_listed_arguments(spec)
    marked = _untracked_by_the_rules(spec)
    if m.checkpoint == "forward_ad":
        return m.role.startswith("tangent:") and _ref_of(m.role) in flow.downstream(set(marked))
    leaves = {leaf for ref in marked for leaf in flow.upstream_leaves(ref)}
    leaves |= {leaf for refs in listed.values() for ref in refs for leaf in flow.upstream_leaves(ref)}
    return (m.checkpoint in ("backward", "double_backward") and m.role.startswith(("grad:", "agrad:", "dgrad:"))
            and _ref_of(m.role) in leaves)


def _rules_dropped(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    return _backward_error_not_raised(spec, result, mismatches) or result.status != "error" and any(
        m.against == "math" and _through_unmarked_outputs(spec, m) for m in mismatches)


def _nothing_marked_or_raised(spec: GraphSpec) -> GraphSpec:
    """No output marked non-differentiable or returned in a list, no tensor passed in a list, no
    deliberate backward error, no saved output modified in place after the forward."""
    spec = dataclasses.replace(_without_errors(lambda n, fn: fn.error is not None)(spec), mutated_outputs=())
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        dataclasses.replace(o, non_differentiable=False, listed=False) for o in fn.outputs),
        args=tuple(dataclasses.replace(a, listed=False) for a in fn.args)))


def _scalar_terms_below_float64(spec: GraphSpec) -> bool:
    """0-dim values of a dtype below float64 and a computed output with terms (a generated
    forward multiplies each term by its Python float coefficient)."""
    return spec.shape == () and spec.dtype != "float64" and any(
        o.kind == "compute" and o.terms for fn in spec.functions for o in fn.outputs)


_FLOAT64_TANGENT = re.compile(r"^dtype torch\.float64, expected torch\.(float32|float16|bfloat16)$"
                             r"|^dtype torch\.complex128, expected torch\.complex64$")


def _float64_derivative(spec: GraphSpec, m: Mismatch) -> bool:
    """A tangent (func.jvp) or a gradient from forward-mode Jacobian blocks (func.jacfwd) that
    came back float64 (complex128 for a complex64 graph)."""
    return (m.role.startswith(("tangent:", "grad:", "agrad:", "dgrad:"))
            and _FLOAT64_TANGENT.match(m.detail) is not None)


def _apply_template_under_vmap(spec: GraphSpec, path: str) -> int | None:
    """The Function whose autograd_function_apply op torch.compile applies under vmap (vmap(grad), or
    vmap(vjp), the forward of the batched gradient paths where eager runs no backward), or None: the
    op's ApplyTemplate (torch/_functorch/autograd_function.py) has no vmap rule. Not one on which
    Dynamo fails first, making the op: one that returns too few gradients (the IndexError of
    dynamo-function-backward-checked-differently) or one tensor marked non-differentiable
    (dynamo-single-non-differentiable-output)."""
    how = _func_dynamo_gradient_inputs(spec, path)
    traced = _traced_under_func_dynamo(spec, path) if how is not None and how[1] else []
    if not traced:
        return None
    fn = spec.functions[traced[0]]
    return None if fn.error == "grad_count" or not fn.tuple_output and fn.outputs[0].non_differentiable else traced[0]


#: the func+dynamo paths whose forward runs under vmap of a reverse-mode transform (grad_vmap: where
#: eager runs no backward)
_VMAP_OUTSIDE_GRAD = ("func.vmap_grad+dynamo", "func.grad_vmap+dynamo")


def _printing_before_the_op(spec: GraphSpec) -> GraphSpec:
    """That Function prints in its forward: Dynamo breaks the graph there and runs the transform
    under its eager fallback."""
    n = next((m for m in (_apply_template_under_vmap(spec, p) for p in _VMAP_OUTSIDE_GRAD) if m is not None), None)
    return _printing_in(spec, {n})


def _printing_in(spec: GraphSpec, functions: set) -> GraphSpec:
    """These Functions print in their forward (a graph break for Dynamo)."""
    return _functions_replaced(spec, lambda m, fn: dataclasses.replace(fn, untraceable="print") if m in functions else fn)


def _gradients_dropped_by_needs_input_grad(spec: GraphSpec, path: str) -> dict[int, set[str]]:
    """Functions traced as autograd_function_apply ops under a gradient transform (one of
    _GRADIENT_TRANSFORMS, which run the same forward; not under vmap, where the op raises
    func-dynamo-vmap-grad-apply-template) whose backward reads
    ctx.needs_input_grad (harness/generic.py: None for a slot it says False), with the leaves whose
    gradient they drop: Dynamo builds needs_input_grad from requires_grad as it sees it, False for a
    differentiated transform input passed as is (shared._function_apply_trace), so a slot holding
    one gets None. Only where eager runs a backward (else the path runs no pullback)."""
    how = _func_dynamo_gradient_inputs(spec, path)
    if how is None or how[1] or not _eager_backward_runs(spec):
        return {}
    trace = _function_apply_trace(spec, how[0])
    found: dict[int, set[str]] = {}
    for n in trace.traced:
        fn = spec.functions[n]
        if fn.needs_input_grad == "ignore":
            continue
        leaves = set().union(*(
            _gradient_reaches(spec, trace.requires, a.ref) for s, a in enumerate(fn.args)
            # (a tensor in a list gets None from the backward in eager too: nothing is dropped)
            if a.is_tensor_input and not a.clone and trace.requires[a.ref] and not trace.seen[a.ref]
            and any(differentiable(fn, k) and reads(o.kind, o, s) for k, o in enumerate(fn.outputs))))
        if leaves:
            found[n] = leaves
    return found


def _needs_input_grad_damage(spec: GraphSpec, m: Mismatch) -> bool:
    """A gradient (first or second order) of a leaf such a Function drops the gradient of."""
    leaves = set().union(*_gradients_dropped_by_needs_input_grad(spec, "func.grad+dynamo").values())
    return (m.checkpoint in ("backward", "double_backward") and m.role.startswith(("grad:", "agrad:", "dgrad:"))
            and _ref_of(m.role) in leaves)


def _needs_input_grad_ignored(spec: GraphSpec) -> GraphSpec:
    """Those Functions' backwards return every gradient, whatever needs_input_grad says."""
    found = _gradients_dropped_by_needs_input_grad(spec, "func.grad+dynamo")
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, needs_input_grad="ignore")
                               if n in found else fn)


#: the func+dynamo paths whose gradients come from a pullback outside any vmap
_GRADIENT_TRANSFORMS = ("func.grad+dynamo", "func.vjp+dynamo", "func.jacrev+dynamo")


def _traced_under_grad_of_grad(spec: GraphSpec) -> list[int]:
    """The Functions torch.compile traces into autograd_function_apply ops inside torch.func.grad of
    grad (func.grad+dynamo with a double backward): the outer grad does not differentiate the op's
    backward, so the second order through it is lost."""
    if spec.backward != "double" or not _eager_backward_runs(spec):
        return []
    return _traced_under_func_dynamo(spec, "func.grad+dynamo")


def _second_order_through_traced(spec: GraphSpec, m: Mismatch) -> bool:
    """A second-order gradient of a value or leaf behind a Function traced as an op."""
    flow = Dataflow(spec)
    behind = frozenset().union(*(flow.upstream(a.ref) for n in _traced_under_grad_of_grad(spec)
                                 for a in spec.functions[n].args if a.ref is not None))
    return m.checkpoint == "double_backward" and m.role.startswith("dgrad:") and _ref_of(m.role) in behind


def _traced_functions_printing(spec: GraphSpec) -> GraphSpec:
    """Those Functions print in their forward: Dynamo breaks the graph there and runs the transform
    under its eager fallback."""
    return _printing_in(spec, set(_traced_under_grad_of_grad(spec)))


ENTRIES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="func-dynamo-custom-rules-dropped",
        title=("torch.compile of a torch.func transform over a custom Function inlines the Function's forward and "
               "drops its own rules: the transform differentiates (or batches) the inlined ops, never calling the "
               "custom backward, jvp or vmap, and ignoring ctx.mark_non_differentiable, with no error or graph "
               "break even under fullgraph=True: a backward whose "
               "results autograd would reject raises nothing, and a non-differentiable output gets a tangent and "
               "passes gradients, and so do an output returned in a list and a tensor passed in one (to which "
               "eager's Function gives none)"),
        first=(2, 13, 0), last=None,
        paths=("func+dynamo",),
        reproducer="func_dynamo_custom_rules_dropped.py",
        upstream=(
            "pytorch/pytorch#193279 (closed: backward under torch.func.grad)",
            "pytorch/pytorch#192985 (open: jvp under torch.func.jvp)",
        ),
        related=("pytorch/pytorch#193277 (open pull request with a fix)",),
        kind="silent wrong result",
        # the generated rules are the true derivatives, so the drop shows only where a backward
        # would raise (the spec's deliberate invalid results) or through a non-differentiable output
        trigger=_rules_drop_visible,
        witness=_rules_dropped,
        damage=lambda spec, m: m.role == "error" and m.checkpoint == "backward" or _through_unmarked_outputs(spec, m),
        damages=("the error at backward (not raised: the backward is not called); tangents of non-differentiable "
                 "outputs and of what is computed from them, gradients of the leaves they are computed from"),
        workaround=_nothing_marked_or_raised,
    ),
    KnownIssue(
        id="func-dynamo-side-effect-fake-tensor",
        title=("torch.compile of torch.func.grad (vjp, jacrev, vmap(grad)) over a custom Function whose forward has "
               "a Python side effect, applied to a tensor computed inside the transform, fails with Dynamo's internal "
               "\"AssertionError: Expected FakeTensor, got <class 'torch.Tensor'>\" (_collect_fake_inputs, "
               "torch/_higher_order_ops/utils.py), fullgraph or not; eager torch.func runs it"),
        first=(2, 13, 0), last=None,
        # not func.jvp, func.vmap, func.jacfwd (forward mode or batching only) nor grad(vmap),
        # whose Function runs under vmap; func.grad_vmap runs vmap(vjp) where eager runs no backward
        paths=tuple(f"func.{t}+dynamo" for t in ("grad", "vjp", "jacrev", "vmap_grad", "grad_vmap")),
        reproducer="func_dynamo_side_effect_fake_tensor.py",
        upstream=(),
        related=(),
        kind="crash",
        trigger=lambda spec: bool(_side_effect_functions_on_transformed_tensors(spec)),
        path_triggers={"func.grad_vmap+dynamo": lambda spec: not _eager_backward_runs(spec)
                       and bool(_side_effect_functions_on_transformed_tensors(spec))},
        # at forward: Dynamo raises it while tracing the whole transform, before any of it ran
        witness=raised("forward", r"^Expected FakeTensor, got <class 'torch.Tensor'>", AssertionError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_without_side_effects,
    ),
    KnownIssue(
        id="func-dynamo-jvp-view-of-gapped-primal",
        title=("torch.compile (aot_eager) of torch.func.jvp taking a view of a primal that is not non-overlapping "
               "and dense, whose tangent is contiguous, fails with \"!this_view_meta->has_fw_view() INTERNAL ASSERT "
               "FAILED ... Expected the output of forward differentiable view operations to have the tangent have the "
               "same layout as primal\" (autograd_meta.cpp) and leaves a forward-AD dual level open; eager jvp runs it"),
        first=(2, 13, 0), last=None,
        # func.jacfwd's basis tangents come through vmap and do not trip it (tried on 2.14.1)
        paths=("func.jvp+dynamo",),
        reproducer="func_dynamo_jvp_view_of_gapped_primal.py",
        upstream=(),
        related=(),
        kind="crash",
        trigger=_view_of_gapped_primal,
        witness=raised("forward_ad", r"tangent have the same layout as primal", RuntimeError),
        damage=error_at("forward_ad"),
        damages="the error at forward_ad (every output and tangent is lost with it)",
        workaround=_gapped_primals_contiguous,
    ),
    KnownIssue(
        id="func-jvp-zero-dim-scalar-tangent-dtype",
        title=("torch.func.jvp of a 0-dim float32 tensor times a Python float (`x * 0.5`) returns a float64 "
               "tangent (eager forward AD: float32): under the transform the scalar, wrapped as a 0-dim float64 "
               "tensor, is not treated as a wrapped number in type promotion"),
        first=(2, 13, 0), last=None,
        # reached where the transform differentiates a generated forward itself: under torch.compile,
        # which drops the Function's own jvp (func-dynamo-custom-rules-dropped)
        paths=("func.jvp+dynamo", "func.jacfwd+dynamo"),
        reproducer="func_jvp_zero_dim_scalar_tangent_dtype.py",
        upstream=("pytorch/pytorch#160513 (closed, still reproduces: comment or reopen)",),
        related=("pytorch/pytorch#90065 (open: forward AD of add upcasts float32 to float64)",),
        kind="wrong metadata",
        trigger=lambda spec: spec.forward_ad and _scalar_terms_below_float64(spec),
        # func.jacfwd runs forward AD where eager runs a backward (harness/paths/func.py)
        path_triggers={"func.jacfwd+dynamo": lambda spec: _eager_backward_runs(spec)
                       and _scalar_terms_below_float64(spec)},
        witness=damaged_without_error(_float64_derivative),
        damage=_float64_derivative,
        damages="the dtype of tangents (func.jvp) or of gradients from forward-mode Jacobians (func.jacfwd)",
        workaround=lambda spec: dataclasses.replace(spec, dtype="float64"),
    ),
    KnownIssue(
        id="func-dynamo-vmap-grad-apply-template",
        title=("torch.compile of torch.func.vmap(grad(f)) fails with InternalTorchDynamoError \"You tried to vmap "
               "over ApplyTemplate, but it does not have vmap support\" where f applies a custom Function with "
               "generate_vmap_rule=True to a tensor computed inside the transform: Dynamo traces it into the "
               "autograd_function_apply op, whose ApplyTemplate Function (torch/_functorch/autograd_function.py) "
               "has no vmap rule; eager vmap(grad) runs it (pytorch/pytorch#129845)"),
        first=(2, 13, 0), last=None,
        # func.grad_vmap+dynamo runs vmap(vjp) where eager runs no backward (harness/paths/func.py)
        paths=("func.vmap_grad+dynamo", "func.grad_vmap+dynamo"),
        reproducer="func_dynamo_vmap_grad_apply_template.py",
        upstream=("pytorch/pytorch#129845", "pytorch/pytorch#186366"),
        kind="crash",
        trigger=lambda spec: _apply_template_under_vmap(spec, "func.vmap_grad+dynamo") is not None,
        path_triggers={"func.grad_vmap+dynamo": lambda spec: _apply_template_under_vmap(
            spec, "func.grad_vmap+dynamo") is not None},
        witness=raised("forward", r"You tried to vmap over ApplyTemplate, but it does not have vmap support",
                       RuntimeError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_printing_before_the_op,
    ),
    KnownIssue(
        id="func-dynamo-needs-input-grad-of-transform-input",
        title=("torch.compile of torch.func.grad (vjp, jacrev) over a custom Function applied to the differentiated "
               "input itself and to a tensor computed from it (or any output of a Function given one: all of a "
               "Function's outputs require grad) gives ctx.needs_input_grad False for the input (Dynamo "
               "sees it not requiring grad), so a backward that returns None where needs_input_grad is False drops "
               "that gradient, silently (x * x: x instead of 2x)"),
        first=(2, 13, 0), last=None,
        paths=_GRADIENT_TRANSFORMS,
        reproducer="func_dynamo_needs_input_grad_of_transform_input.py",
        upstream=(),
        kind="silent wrong result",
        trigger=lambda spec: bool(_gradients_dropped_by_needs_input_grad(spec, "func.grad+dynamo")),
        witness=damaged_without_error(_needs_input_grad_damage),
        damage=_needs_input_grad_damage,
        damages="gradients (grad:*, agrad:*, dgrad:*) of the differentiated leaves such a Function is passed as is",
        workaround=_needs_input_grad_ignored,
    ),
    KnownIssue(
        id="func-dynamo-grad-grad-traced-function-second-order-lost",
        title=("torch.compile of torch.func.grad(grad(f)) (backends eager, aot_eager and inductor) where f applies "
               "a custom Function to a tensor computed from the input (a clone, `x * 1.0`, another Function's output): "
               "Dynamo traces the Function into an autograd_function_apply op, and the outer grad does not "
               "differentiate the op's backward, so the second derivative through it is lost, silently (tanh: 0 "
               "where eager gives 0.38); applied to the input itself (Dynamo inlines its forward), or with "
               "grad(grad(torch.compile(f))), it is right"),
        first=(2, 13, 0), last=None,
        paths=("func.grad+dynamo",),
        reproducer="func_dynamo_grad_grad_traced_function_second_order_lost.py",
        upstream=(),
        related=("pytorch/pytorch#174067 (open: torch.compile's autograd_function_apply pathway and torch.func "
                 "transforms)",),
        kind="silent wrong result",
        trigger=lambda spec: bool(_traced_under_grad_of_grad(spec)),
        witness=damaged_without_error(_second_order_through_traced),
        damage=_second_order_through_traced,
        damages="the second-order gradients (double_backward dgrad:*) of the values and leaves behind such a Function",
        workaround=_traced_functions_printing,
    ),
    KnownIssue(
        id="func-dynamo-aot-dirty-clone-update-lost",
        title=("torch.func.grad (and vjp, jacrev) of a torch.compile'd function (backends aot_eager, inductor) in "
               "which a custom Function modifies in place, and marks dirty, a tensor the compiled function made (a clone): "
               "the Function's output comes back with the value from before the in-place update, silently; eager "
               "grad, torch.compile alone, and backend eager give the updated value. Seen where Dynamo does not "
               "trace the Function (it skips the frame: \"cannot properly resume from this graph break\"); graphs "
               "where it traces it keep the update, and the exact condition is not isolated, so the witness (a wrong "
               "value downstream of such an output) decides"),
        first=(2, 13, 0), last=None,
        paths=_GRADIENT_TRANSFORMS,
        reproducer="func_dynamo_aot_dirty_clone_update_lost.py",
        upstream=(),
        kind="silent wrong result",
        trigger=lambda spec: bool(_dirty_clones(spec)),
        witness=lambda spec, result, ms: result.status != "error" and any(
            m.checkpoint == "forward" and m.role.startswith("out:") and _dirty_clone_value_lost(spec, m) for m in ms),
        damage=_dirty_clone_value_lost,
        damages=("the forward values of those outputs and of what is computed from them; the gradients of the "
                 "leaves behind the Functions that read them"),
        workaround=lambda spec: _aliasing_output_as_copy(spec, _dirty_clones),
    ),
)
