"""AOTAutograd and the backends below it (aot_eager, Inductor), under torch.compile: their entries, each beside its predicates."""

from __future__ import annotations

import dataclasses
import re

from harness.dataflow import Dataflow, base_ref, differentiable
from harness.known_issues.entry import KnownIssue, error_at
from harness.known_issues.shared import (
    _aliases_of,
    _aliasing_output_as_copy,
    _breaks_the_graph_itself,
    _functions_replaced,
    _given_one_tensor_twice_under_dynamo,
    _gradient_record_of,
    _ref_of,
)
from harness.oracles.compare import Mismatch
from harness.run import GRADIENT_ROLES, RunResult
from harness.spec import COMPLEX_DTYPES, FunctionSpec, GraphSpec

_VIEW_AS_COMPLEX = re.compile(r"to view (?:Float|Double) as Complex(?:Float|Double) \(different element sizes\)")


def _complex_viewed_from_float(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The path raised Inductor's view.dtype stride error, wherever it compiled."""
    return result.status == "error" and _VIEW_AS_COMPLEX.search(str(result.error)) is not None


def _in_real_dtype(spec: GraphSpec) -> GraphSpec:
    """The same graph in the real dtype of the complex one (its ops, linear and square, are
    real ops too)."""
    return dataclasses.replace(spec, dtype={"complex64": "float32", "complex128": "float64"}[spec.dtype])


def _detached_views(spec: GraphSpec) -> frozenset[str]:
    """Views of leaves that the compiled forward reads, that require grad and receive no
    gradient (non-leaves): AOT Autograd detaches each of them. A gradient counts only from a
    Function whose backward the compiled graph keeps: one whose every output that requires grad
    is regenerated from an intermediate base (dynamo-aot-intermediate-alias-skips-backward) sends
    none."""
    flow = Dataflow(spec)
    skipped = _backwards_skipped_whole(spec)
    return frozenset(r for r in flow.leaf_values_read()
                     if "[" in r and flow.requires_grad[r]
                     and not any(flow.gets_gradient(n, slot) for n, slot in flow.edges_into(r) if n not in skipped))


def _backwards_skipped_whole(spec: GraphSpec) -> frozenset[int]:
    """The Functions every output of which that requires grad AOT Autograd regenerates as a plain
    view of an intermediate base, so that their backward never runs."""
    regenerated = set(_outputs_regenerated_from_an_intermediate_base(spec))
    if not regenerated:
        return frozenset()
    flow = Dataflow(spec)
    return frozenset(n for n in {n for n, _ in regenerated}
                     if all((n, k) in regenerated for k in spec.functions[n].tensor_outputs
                            if flow.requires_grad[f"f{n}.{k}"]))


def _inputs_dynamo_counts(fn: FunctionSpec) -> list[int]:
    """The slots whose requires_grad Dynamo's autograd_function_apply gives the outputs: the tensor
    inputs, and a tensor passed in a list (Arg.listed) that the forward reads (one it does not read is
    not an input of the traced subgraph; one it reads counts, where eager's apply counts it not:
    dynamo-listed-argument-tracked)."""
    read = {t.slot for o in fn.outputs for t in o.terms}
    return [s for s, a in enumerate(fn.args) if a.is_tensor_input or a.listed and s in read]


def _outputs_cut_off_under_aot(spec: GraphSpec) -> frozenset[str]:
    """The Function outputs that require grad in eager but, inside the compiled graph, not once
    those views are detached: the ones computed from detached views only (every output, when all
    the compiled forward's inputs that require grad are such views)."""
    detached = _detached_views(spec)
    if not detached:
        return frozenset()
    flow = Dataflow(spec)
    rg = {r: flow.requires_grad[r] and r not in detached for r in flow.requires_grad if r.startswith("x")}
    for n, fn in enumerate(spec.functions):
        any_input = fn.grad_mode != "no_grad" and any(rg[fn.args[s].ref] for s in _inputs_dynamo_counts(fn))
        rg.update({f"f{n}.{k}": any_input and differentiable(fn, k) for k in fn.tensor_outputs})
    return frozenset(r for r, eager_rg in flow.requires_grad.items() if r.startswith("f") and eager_rg and not rg[r])


def _outputs_without_grad_under_aot(spec: GraphSpec) -> frozenset[str]:
    """Of those, the ones that come back with requires_grad=False. An output regenerated from an
    intermediate base outside the graph comes back requiring grad, as a leaf (no grad_fn), even
    where its base lost requires_grad (2.13.0, a 60 s README job's fc7c468a)."""
    regenerated = {f"f{n}.{k}" for n, k in _outputs_regenerated_from_an_intermediate_base(spec)}
    return _outputs_cut_off_under_aot(spec) - regenerated


def _outputs_that_may_lose_grad_in_a_region(spec: GraphSpec) -> frozenset[str]:
    """Where graph breaks split the compiled forward into regions (Functions Dynamo cannot
    trace run eagerly between them), AOT Autograd detaches each region's own inputs that get
    no gradient inside the region. Which Functions share a region depends on Dynamo, so this
    is the most a split can lose: the outputs of a Function each of whose inputs that require
    grad is a non-leaf (a view of a leaf, another Function's output) that this Function sends
    no gradient to, or an output lost in turn."""
    flow = Dataflow(spec)
    lost: set[str] = set()
    for n, fn in enumerate(spec.functions):
        inputs = [(slot, fn.args[slot].ref) for slot in _inputs_dynamo_counts(fn) if flow.requires_grad[fn.args[slot].ref]]
        if inputs and all(ref in lost or ("[" in ref or ref.startswith("f")) and not flow.gets_gradient(n, slot)
                          for slot, ref in inputs):
            lost |= {f"f{n}.{k}" for k in fn.tensor_outputs if flow.requires_grad[f"f{n}.{k}"]}
    return frozenset(lost)


def _forward_completed(result: RunResult) -> bool:
    """The forward ran to its end (a deliberate error at backward, say, comes after it): its
    outputs' flags were recorded and compared."""
    return result.status != "error" or result.error_checkpoint != "forward"


def _some_lost_requires_grad_in_a_region(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The run went through Dynamo's eager fallback (a graph break split the compiled forward),
    and some outputs lost requires_grad, each one that a split can lose. Seen as requires_grad at
    forward, or as grad_fn in the forward's metadata: where the run raised later (at backward),
    only the metadata of the forward is compared."""
    lost = {_ref_of(m.role) for m in mismatches if m.detail == "expected True, got False" and (
        m.checkpoint == "forward" and m.role.startswith("requires_grad:")
        or m.checkpoint == "meta:forward" and m.role.startswith("grad_fn:"))}
    return (_forward_completed(result) and "eager fallback" in result.note
            and bool(lost) and lost <= _outputs_that_may_lose_grad_in_a_region(spec))


def _flags_and_records_of_outputs_lost_in_a_region(spec: GraphSpec, m: Mismatch) -> bool:
    """Those outputs' autograd flags, and at backward what is recorded of them (retained
    gradients, hooks). Where another output keeps requiring grad the backward still runs and the
    leaves' gradients are unchanged: the detached inputs get none from their region. Where every
    output that requires grad in eager may be lost, the path may have no loss at all and skip the
    backward: then what the backward records is on eager's side only (`_skipped_backward`)."""
    lost = _outputs_that_may_lose_grad_in_a_region(spec)
    if m.checkpoint in ("forward", "meta:forward"):
        return m.role.startswith(("requires_grad:", "grad_fn:", "is_leaf:")) and _ref_of(m.role) in lost
    if m.checkpoint not in ("backward", "meta:backward"):
        return False
    return _gradient_record_of(spec, lost, m) or (_every_output_may_lose_grad_in_a_region(spec) and _skipped_backward(m))


def _every_output_may_lose_grad_in_a_region(spec: GraphSpec) -> bool:
    flow = Dataflow(spec)
    return _outputs_that_may_lose_grad_in_a_region(spec) >= {r for r, rg in flow.requires_grad.items()
                                                             if r.startswith("f") and rg}


def _skipped_backward(m: Mismatch) -> bool:
    """A difference a backward the path skipped makes: the skip itself (harness/run.py records
    "nothing requires grad"), a record present on one side only (a gradient, its strides), a
    hook that did not fire."""
    return (m.role == "skipped" or m.detail == "present on one side only"
            or m.role.startswith("stride:") and m.detail.endswith("got '<absent>'")
            or m.role.startswith("hook") and m.detail.endswith("got ()"))


def _zeros_from_functions_losing_grad_in_a_region(spec: GraphSpec) -> GraphSpec:
    """Those Functions return zeros instead of None for unused inputs: every input of theirs
    then gets a gradient inside any region, and AOT keeps it."""
    functions = {int(r[1:].split(".")[0]) for r in _outputs_that_may_lose_grad_in_a_region(spec)}
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, unused_grad="zeros")
                               if n in functions else fn)


def _every_output_loses_grad(spec: GraphSpec) -> bool:
    flow = Dataflow(spec)
    return _outputs_without_grad_under_aot(spec) == {r for r, rg in flow.requires_grad.items()
                                                     if r.startswith("f") and rg}


def _all_lost_requires_grad(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Each output predicted to lose requires_grad came back without it, as the run itself
    recorded it (requires_grad is True for each in eager, by the prediction). The run's record,
    not a mismatch: where eager raised at backward and the path did not (the path skipped the
    backward, nothing requiring grad), the forward's values are not compared at all."""
    recorded = result.values.get("forward", {})
    lost = _outputs_without_grad_under_aot(spec)
    return _forward_completed(result) and bool(lost) and all(recorded.get(f"requires_grad:{r}") is False for r in lost)


def _flags_of_lost_outputs_and_the_skipped_backward(spec: GraphSpec, m: Mismatch) -> bool:
    """The lost outputs' autograd flags; at backward, what is recorded of them (retained
    gradients, hooks); and everything at backward when every output lost requires_grad (the
    path skipped the backward: no output required grad, so there was no loss to differentiate).
    The leaves' gradients are not changed otherwise: the detached views get none in eager either."""
    lost = _outputs_cut_off_under_aot(spec)
    if m.checkpoint in ("forward", "meta:forward"):
        return m.role.startswith(("requires_grad:", "grad_fn:", "is_leaf:")) and _ref_of(m.role) in lost
    if m.checkpoint in ("backward", "meta:backward"):
        return _every_output_loses_grad(spec) or _ref_of(m.role) in lost
    return False


def _zeros_for_detached_views(spec: GraphSpec) -> GraphSpec:
    """The Functions that read those views return zeros instead of None for unused inputs,
    so the views receive a gradient and AOT keeps them."""
    flow = Dataflow(spec)
    readers = {n for r in _detached_views(spec) for n, _ in flow.edges_into(r)}
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, unused_grad="zeros")
                               if n in readers else fn)


def _none_into_a_compiled_region(spec: GraphSpec) -> frozenset[str]:
    """Values that get None from a Function Dynamo runs eagerly after a graph break, through an
    argument the compiled region before it made (a clone, or another Function's output): the
    region's CompiledFunctionBackward gets None for that output, materializes zeros, and passes
    them on, where eager's clone (or Function) node gets no gradient and leaves None. Which
    Functions run eagerly Dynamo decides; each one that breaks the graph itself does, and after
    any graph break the others may (docs/compiled.md)."""
    if not (any(_breaks_the_graph_itself(fn) for fn in spec.functions) or _given_one_tensor_twice_under_dynamo(spec)):
        return frozenset()
    flow = Dataflow(spec)
    return frozenset(fn.args[slot].ref for n, fn in enumerate(spec.functions) if flow.node_exists(n)
                     for slot, a in enumerate(fn.args)
                     if a.is_tensor_input and (a.clone or a.ref.startswith("f")) and flow.requires_grad[a.ref]
                     and not flow.gets_gradient(n, slot))


def _leaves_behind(spec: GraphSpec) -> frozenset[str]:
    """The leaves whose gradient can come through those values."""
    flow = Dataflow(spec)
    return frozenset().union(*(flow.upstream(r) for r in _none_into_a_compiled_region(spec)))


def _zeros_where_eager_has_none(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Through the eager fallback, a leaf behind such a value gets an all-zero gradient where
    eager's is None."""
    if "eager fallback" not in result.note:
        return False
    grads = result.tensors.get("backward", {})
    behind = _leaves_behind(spec)
    return any(m.checkpoint == "backward" and m.detail == "expected None" and m.role.startswith(GRADIENT_ROLES)
               and grads.get(m.role) is not None and not bool((grads[m.role] != 0).any())
               and _ref_of(m.role) in behind for m in mismatches)


def _zero_gradient_damage(spec: GraphSpec, m: Mismatch) -> bool:
    """A gradient of a leaf behind such a value: present (zeros) where eager's is None, and its
    strides (meta:backward), absent in eager; and what a hook on such a leaf records of it (a
    post-accumulate hook fires where eager accumulates nothing: a 20-minute campaign's 5ff84527)."""
    if m.checkpoint == "backward" and m.role.startswith("hook"):
        h = int(m.role[len("hook"):].partition(".")[0])
        return spec.hooks[h].target in _leaves_behind(spec)
    if m.checkpoint in ("backward", "double_backward"):
        return m.detail == "expected None" and m.role.startswith(GRADIENT_ROLES) and _ref_of(m.role) in _leaves_behind(spec)
    role = m.role.removeprefix("stride:")
    return (m.checkpoint in ("meta:backward", "meta:double_backward") and m.role.startswith("stride:")
            and m.detail.startswith("expected '<absent>'") and role.startswith(GRADIENT_ROLES)
            and _ref_of(role) in _leaves_behind(spec))


def _zeros_from_the_functions_sending_none(spec: GraphSpec) -> GraphSpec:
    """The Functions that send None into a compiled region's output return zeros for unused inputs:
    eager's gradient is then zeros too."""
    flow = Dataflow(spec)
    senders = {n for r in _none_into_a_compiled_region(spec) for n, s in flow.edges_into(r)
               if not flow.gets_gradient(n, s)}
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, unused_grad="zeros")
                               if n in senders else fn)
def _node_hooks_on_detached_views(spec: GraphSpec) -> tuple[int, ...]:
    """Pre and post hooks on the node of a view that AOT Autograd detaches (_detached_views),
    and tensor hooks on that view (autograd runs them as pre hooks of the same node), when a
    backward runs: the compiled region's graph has no edge to that node, so they never fire.
    Eager runs the node, with a None gradient, and fires them. And the hooks of the region's
    own outputs where that edge was its only way to the leaves a partial backward asks for
    (_region_cut_off_from_the_chosen_leaves)."""
    detached = _detached_views(spec) if spec.backward != "none" else frozenset()
    cut_off = _region_cut_off_from_the_chosen_leaves(spec, detached)
    return tuple(h for h, hook in enumerate(spec.hooks) if hook.kind in ("pre", "post", "tensor") and (
        hook.target in detached or cut_off and hook.target is not None and hook.target.startswith("f")))


def _region_cut_off_from_the_chosen_leaves(spec: GraphSpec, detached: frozenset[str]) -> bool:
    """Under a partial backward (grad_leaves), every chosen leaf the compiled region reads is
    behind a view AOT Autograd detaches: its CompiledFunctionBackward keeps no edge toward them,
    so the engine never runs it (GraphTask::init_to_execute) and no hook on the Functions' outputs
    fires, where eager runs each Function node with an edge to such a view."""
    if not spec.grad_leaves or not detached:
        return False
    flow = Dataflow(spec)
    chosen = {f"x{i}" for i in spec.grad_leaves}
    kept = {r for r in flow.leaf_values_read() if flow.requires_grad[r] and r not in detached}
    return any(base_ref(r) in chosen for r in detached) and not any(base_ref(r) in chosen for r in kept)


_NOT_FIRED = re.compile(r"expected \('fired'(, 'fired')*,?\), got \(\)")


def _node_hook_not_fired(spec: GraphSpec, m: Mismatch) -> bool:
    return (m.checkpoint == "backward" and m.role in {f"hook{h}" for h in _node_hooks_on_detached_views(spec)}
            and _NOT_FIRED.fullmatch(m.detail) is not None)


def _storage_roots(spec: GraphSpec) -> dict[str, str]:
    """The value that owns each tensor value's storage: a leaf for itself and its views, a
    clone argument (c<function>_<slot>) for itself, a computed output for itself, and an output
    that aliases an argument (a view of it, the input returned as-is, the input modified in
    place) for that argument's owner."""
    roots: dict[str, str] = {}
    for i, leaf in enumerate(spec.leaves):
        roots.update({f"x{i}": f"x{i}", **{f"x{i}[{j}]": f"x{i}" for j in range(leaf.views)}})
    for n, fn in enumerate(spec.functions):
        for k in fn.tensor_outputs:
            out = fn.outputs[k]
            if out.kind in ("view", "input", "dirty"):
                arg = fn.args[out.slot]
                roots[f"f{n}.{k}"] = f"c{n}_{out.slot}" if arg.clone else roots[arg.ref]
            else:
                roots[f"f{n}.{k}"] = f"f{n}.{k}"
    return roots


def _traced_as_one_graph(spec: GraphSpec) -> bool:
    """Dynamo traces the whole forward into one graph: every Function is one it traces
    (strategies/_graphs.py `_traceable`), so the graph's outputs are all the Functions' outputs.
    Under a checkpoint too: Dynamo traces torch.utils.checkpoint (non-reentrant) as a higher-order
    op that AOT Autograd inlines, so the same outputs leave the same graph.
    (The loop form can still break the graph elsewhere: the witness then decides.)"""
    return (all(
        fn.code == "plain" and not fn.jvp and fn.untraceable == "none" and not _breaks_the_graph_itself(fn)
        and (fn.dirty_return == "input" or all(o.kind != "dirty" for o in fn.outputs)) for fn in spec.functions))


def _outputs_regenerated_from_an_intermediate_base(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    """(function, output) of each output that AOT Autograd regenerates as a plain view of an
    intermediate base (torch/_functorch/_aot_autograd/collect_metadata_analysis.py: an output
    whose `_base` is not a graph input, when it and its base require grad and another graph
    output shares its storage, is OutputType.alias_of_intermediate*: the compiled graph
    returns the base and the view is replayed from it outside the compiled autograd Function).
    These are the outputs a Function returns as a view of an argument, or as the argument
    itself, where that argument's storage belongs to a value computed inside the graph (a
    clone, a computed output) that requires grad, and some other Function output shares that
    storage. Outputs that alias a graph input keep the custom backward (custom_function_view),
    and an input modified in place keeps it in its base's history (CopySlices). (AOT Autograd
    decides this at compile time, whether a backward runs or not.)"""
    if not _traced_as_one_graph(spec):
        return ()
    flow = Dataflow(spec)
    roots = _storage_roots(spec)
    outputs = [(n, k) for n, fn in enumerate(spec.functions) for k in fn.tensor_outputs]
    sharing: dict[str, int] = {}
    for n, k in outputs:
        sharing[roots[f"f{n}.{k}"]] = sharing.get(roots[f"f{n}.{k}"], 0) + 1

    def base_requires_grad(root: str) -> bool:
        if root.startswith("c"):  # a clone requires grad as its source does
            n, slot = (int(p) for p in root[1:].split("_"))
            source = flow.requires_grad[spec.functions[n].args[slot].ref]
        else:
            source = flow.requires_grad[root]
        # a Function that modifies a view of it in place, with grad, rebases its history
        return source or any(spec.functions[n].outputs[k].kind == "dirty" and roots[f"f{n}.{k}"] == root
                             and flow.requires_grad[f"f{n}.{k}"] for n, k in outputs)
    return tuple((n, k) for n, k in outputs
                 if spec.functions[n].outputs[k].kind in ("view", "input") and flow.requires_grad[f"f{n}.{k}"]
                 and not roots[f"f{n}.{k}"].startswith("x") and sharing[roots[f"f{n}.{k}"]] >= 2
                 and base_requires_grad(roots[f"f{n}.{k}"]))


def _gradients_past_skipped_backwards(spec: GraphSpec) -> frozenset[str]:
    """The values whose gradient the skipped custom backwards change: the arguments of each
    Function with such an output, and everything upstream of them."""
    flow = Dataflow(spec)
    return frozenset().union(*(flow.upstream(a.ref) for n, _ in _outputs_regenerated_from_an_intermediate_base(spec)
                               for a in spec.functions[n].args if a.ref is not None))


def _gradient_past_a_skipped_backward(spec: GraphSpec, m: Mismatch) -> bool:
    values = _gradients_past_skipped_backwards(spec)
    if m.checkpoint in ("double_backward", "meta:double_backward"):
        return m.role.removeprefix("stride:").removeprefix("dgrad:") in values
    return _gradient_record_of(spec, values, m)


def _dirty_frame_inputs(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    """(function, output) of each dirty output of a Function Dynamo traces into the
    autograd_function_apply op (it has a node, does not break the graph itself, and returns the
    dirty input as itself) whose argument can be an input of the frame Dynamo compiles: in the
    loop form (`forward_code="loop"`) a graph break anywhere makes Dynamo skip the loop's frame and
    compile each apply in a frame of its own, the clone the loop made for it coming in as its input.
    (The straight form makes each clone in the frame that applies the Function.)"""
    if spec.forward_code != "loop":
        return ()
    flow = Dataflow(spec)
    return tuple((n, k) for n, fn in enumerate(spec.functions)
                 if flow.node_exists(n) and not _breaks_the_graph_itself(fn) and fn.dirty_return == "input"
                 for k, o in enumerate(fn.outputs) if o.kind == "dirty")


def _values_behind_dirty_frame_inputs(spec: GraphSpec) -> frozenset[str]:
    """The values whose gradient the skipped backward changes: the arguments of each such Function
    and everything upstream of them."""
    flow = Dataflow(spec)
    return frozenset().union(*(flow.upstream(a.ref) for n, _ in _dirty_frame_inputs(spec)
                               for a in spec.functions[n].args if a.ref is not None))


def _outputs_losing_grad_with_a_dirty_frame_input(spec: GraphSpec) -> frozenset[str]:
    """Outputs that require grad in eager, through the Function's node, and not under AOT, where the
    dirty inputs no longer count as the Function's inputs: a dirty output whose input does not
    require grad (it is returned as that input); the other outputs of a Function whose only inputs
    that require grad are dirty ones; and what is computed from them."""
    flow = Dataflow(spec)
    lost: set[str] = set()
    for n in {n for n, _ in _dirty_frame_inputs(spec)}:
        fn = spec.functions[n]
        dirty_slots = {o.slot for o in fn.outputs if o.kind == "dirty"}
        others_require_grad = any(a.ref is not None and flow.requires_grad[a.ref]
                                  for slot, a in enumerate(fn.args) if slot not in dirty_slots)
        lost |= {f"f{n}.{k}" for k in fn.tensor_outputs if flow.requires_grad[f"f{n}.{k}"] and (
            not flow.requires_grad[fn.args[fn.outputs[k].slot].ref] if fn.outputs[k].kind == "dirty"
            else not others_require_grad)}
    return flow.downstream(lost)


def _dirty_frame_input_damage(spec: GraphSpec, m: Mismatch) -> bool:
    """At forward, autograd's flags of those outputs; at backward, the gradient records of every
    value behind those Functions."""
    if m.checkpoint in ("forward", "meta:forward"):
        return (m.role.startswith(("requires_grad:", "grad_fn:", "is_leaf:"))
                and _ref_of(m.role) in _outputs_losing_grad_with_a_dirty_frame_input(spec))
    return _gradient_record_of(spec, _values_behind_dirty_frame_inputs(spec), m)


def _backward_skipped_for_a_dirty_frame_input(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Through Dynamo's eager fallback (a graph break, so the loop's frame was skipped), a gradient
    of a value behind such a Function differs, or such an output lost requires_grad."""
    return "eager fallback" in result.note and any(
        _dirty_frame_input_damage(spec, m) and m.role.startswith(("grad:", "grad2:", "agrad:", "requires_grad:"))
        for m in mismatches)


def _complex_zero_dim_sums(spec: GraphSpec) -> frozenset[str]:
    """In a 0-dim complex graph, the computed outputs that add (a bias plus terms: harness/generic.py
    makes `torch.full(shape, bias)` and adds each term) and the outputs aliasing them: Inductor's
    complex add decomposition reshapes 0-dim operands to one element and returns `result[0]`
    (torch/_inductor/decomposition.py, `add`), so the sum comes back a view of a 1-element tensor."""
    if spec.dtype not in COMPLEX_DTYPES or tuple(spec.shape) != ():
        return frozenset()
    sums = frozenset(f"f{n}.{k}" for n, fn in enumerate(spec.functions) for k, o in enumerate(fn.outputs)
                     if o.kind == "compute" and o.terms)
    return _aliases_of(spec, sums)


def _alias_of_a_complex_zero_dim_sum(spec: GraphSpec, m: Mismatch) -> bool:
    return (m.checkpoint == "meta:forward" and m.role.startswith("alias:")
            and _ref_of(m.role) in _complex_zero_dim_sums(spec))


ENTRIES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="inductor-complex-empty-view-dtype",
        title=("torch.compile with the inductor backend cannot compile elementwise arithmetic on an empty "
               "complex tensor: it views its float result back as complex with aten.view.dtype, whose stride "
               "check rejects the empty tensor's strides (\"must be divisible by 2 to view Float as "
               "ComplexFloat\", \"must be 1 to view ...\"); eager computes the empty result"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:inductor",),  # compiled autograd's inductor backward graphs were not seen to hit it
        reproducer="inductor_complex_empty_view_dtype.py",
        upstream=("pytorch/pytorch#190274 (open)", "pytorch/pytorch#190530 (open pull request with a fix)"),
        related=(),
        kind="crash",
        trigger=lambda spec: spec.dtype in COMPLEX_DTYPES and 0 in spec.shape,
        witness=_complex_viewed_from_float,
        damage=error_at("forward", "backward", "double_backward"),
        damages="the error (what completed before it is still compared)",
        workaround=_in_real_dtype,
    ),
    KnownIssue(
        id="dynamo-aot-detached-input-drops-requires-grad",
        title=("torch.compile with an AOT Autograd backend: when the only inputs of the compiled region "
               "that require grad are non-leaf tensors (views of leaves) that get no gradient (the "
               "Function's backward returns None for them), AOT Autograd detaches them "
               "(graph_compile.py, indices_of_inps_to_detach), so custom Function outputs that require "
               "grad in eager come back with requires_grad=False and no grad_fn. A gradient from a Function "
               "whose backward AOT skips (dynamo-aot-intermediate-alias-skips-backward) counts as none, and an "
               "output regenerated from such a base comes back requiring grad as a leaf"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="dynamo_aot_detached_input_drops_requires_grad.py",
        upstream=(),
        related=(
            "pytorch/pytorch#134193 (a closed 2024 pull request limiting when AOT Autograd detaches graph inputs)",
        ),
        kind="wrong metadata",
        trigger=lambda spec: bool(_outputs_without_grad_under_aot(spec)),
        witness=_all_lost_requires_grad,
        damage=_flags_of_lost_outputs_and_the_skipped_backward,
        damages=("requires_grad, grad_fn and is_leaf of the outputs (forward, meta:forward); everything at "
                 "backward, which the path skipped (no output required grad)"),
        workaround=_zeros_for_detached_views,
    ),
    KnownIssue(
        id="dynamo-aot-detached-region-input-drops-requires-grad",
        title=("dynamo-aot-detached-input-drops-requires-grad in one region of a forward that graph breaks split "
               "(a Function Dynamo cannot trace runs eagerly between them): AOT Autograd detaches that region's inputs "
               "that get no gradient inside it, so the outputs computed from them alone lose requires_grad while the "
               "other regions' keep it"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="dynamo_aot_detached_input_drops_requires_grad.py",
        upstream=(),
        related=(
            "pytorch/pytorch#134193 (a closed 2024 pull request limiting when AOT Autograd detaches graph inputs)",
        ),
        kind="wrong metadata",
        trigger=lambda spec: bool(_outputs_that_may_lose_grad_in_a_region(spec)),
        witness=_some_lost_requires_grad_in_a_region,
        damage=_flags_and_records_of_outputs_lost_in_a_region,
        damages=("requires_grad, grad_fn and is_leaf of those outputs (forward, meta:forward); at backward, what is "
                 "recorded of them (retained gradients, hooks); where every output that requires grad may be lost, "
                 "what a skipped backward changes (the skip, gradients and hook records absent on the path)"),
        workaround=_zeros_from_functions_losing_grad_in_a_region,
    ),
    KnownIssue(
        id="aot-unused-gradient-materialized-as-zeros",
        title=("torch.compile with an AOT Autograd backend: a value computed in a compiled region (a clone of a leaf, "
               "a Function's output) that a custom Function run eagerly after a graph break sends no gradient (None) "
               "gets zeros instead: the region's CompiledFunctionBackward materializes its undefined output gradient, "
               "so the leaf's gradient is an all-zero tensor where eager's is None (autograd.grad(allow_unused=True), "
               ".grad)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="aot_unused_gradient_materialized_as_zeros.py",
        upstream=(
            "pytorch/pytorch#131794 (open)",
            "pytorch/torchdynamo#1102 (closed, 2022: the same with a graph break)",
        ),
        related=(
            "pytorch/pytorch#186355 (a closed pull request keeping eager's None for unused inputs)",
            "pytorch/pytorch#177764 (a closed pull request for #131794)",
        ),
        kind="wrong metadata",
        trigger=lambda spec: bool(_none_into_a_compiled_region(spec)),
        witness=_zeros_where_eager_has_none,
        damage=_zero_gradient_damage,
        damages=("the gradients (retained grads included) of the values behind those values: zeros where eager has "
                 "None (backward), and their strides (meta:backward); what hooks on those leaves record at backward"),
        workaround=_zeros_from_the_functions_sending_none,
    ),
    KnownIssue(
        id="dynamo-aot-detached-input-node-hooks-not-fired",
        title=("The hook side of dynamo-aot-detached-input-drops-requires-grad: AOT Autograd detaches a view of a "
               "leaf that the compiled region reads and sends no gradient (graph_compile.py, indices_of_inps_to_detach), "
               "so the compiled backward has no edge to the view's node, and pre and post hooks registered on that "
               "node, and tensor hooks on the view, never fire; eager runs the node with a None gradient and "
               "fires them. Under a partial backward (backward(inputs=...)) whose leaves the region reaches only "
               "through such views, the region's whole backward node is skipped, so hooks on its outputs (a "
               "tensor hook on a Function's output) never fire either"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="dynamo_aot_detached_input_node_hooks_not_fired.py",
        upstream=(),
        related=(
            "pytorch/pytorch#134193 (a closed 2024 pull request limiting when AOT Autograd detaches graph inputs)",
        ),
        kind="silent wrong result",
        trigger=lambda spec: bool(_node_hooks_on_detached_views(spec)),
        witness=lambda spec, result, ms: any(_node_hook_not_fired(spec, m) for m in ms),
        damage=_node_hook_not_fired,
        damages="at backward, the record of each such hook (it did not fire)",
        workaround=_zeros_for_detached_views,
    ),
    KnownIssue(
        id="dynamo-aot-intermediate-alias-skips-backward",
        title=("torch.compile with an AOT Autograd backend: a custom Function output that is a view of an argument "
               "(or the argument returned as-is) computed inside the compiled region, whose storage another output "
               "shares, is regenerated as a plain view of that intermediate outside the compiled graph "
               "(collect_metadata_analysis.py, OutputType.alias_of_intermediate*; no custom_function_view case as "
               "for input aliases), so the Function's backward is skipped for it: its gradient reaches the "
               "argument unchanged and the Function's other inputs get none from it"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="dynamo_aot_intermediate_alias_skips_backward.py",
        upstream=(),
        related=(
            "pytorch/pytorch#102970 (closed: the graph-input alias case, fixed)",
            "pytorch/pytorch#97691 (closed: the intermediate-base replay, as a performance issue)",
        ),
        kind="silent wrong result",
        trigger=lambda spec: spec.backward != "none" and bool(_outputs_regenerated_from_an_intermediate_base(spec)),
        witness=lambda spec, result, ms: any(_gradient_past_a_skipped_backward(spec, m) and m.role.startswith(
            ("grad:", "grad2:", "agrad:", "retained:", "dgrad:")) for m in ms),  # a gradient itself, not a hook's record
        damage=_gradient_past_a_skipped_backward,
        damages=("at backward (and double_backward), the gradients, retained grads and hook records of the "
                 "arguments of each such Function and of every value upstream of them (and their strides)"),
        workaround=lambda spec: _aliasing_output_as_copy(spec, _outputs_regenerated_from_an_intermediate_base),
    ),
    KnownIssue(
        id="dynamo-aot-dirty-graph-input-skips-backward",
        title=("torch.compile with an AOT Autograd backend: a custom Function that modifies in place (mark_dirty) an "
               "input of the compiled frame (a tensor made outside it) has its backward skipped for that output, "
               "silently: its forward runs under no_grad inside the autograd_function_apply op, so AOT Autograd keeps "
               "the input mutation in the graph, hidden from autograd (functional_utils.py, "
               "_check_if_mutation_can_be_in_graph: mutations_under_no_grad_or_inference_mode), and returns the dirty "
               "output as the input itself with its old history; the input's gradient passes through unchanged and "
               "the Function's other inputs lose that output's share (its outputs that require grad only through its "
               "node, with only dirty inputs requiring grad, come back not requiring grad)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),  # backend eager keeps the Function's node
        reproducer="dynamo_aot_dirty_graph_input_skips_backward.py",
        upstream=(),  # related, not the same: #184113 (an intermediate whose dirty output is discarded, fixed)
        kind="silent wrong result",
        trigger=lambda spec: bool(_dirty_frame_inputs(spec)),
        witness=_backward_skipped_for_a_dirty_frame_input,
        damage=_dirty_frame_input_damage,
        damages=("at forward, requires_grad, grad_fn and is_leaf of the outputs that require grad only through a "
                 "dirty input (the dirty output of an input that does not require grad, the other outputs where "
                 "only dirty inputs require grad) and of what is computed from them; at backward, the gradients, "
                 "retained grads and hook records (and their strides) of the arguments of each such Function and "
                 "of every value upstream of them"),
        # the straight forward makes each clone in the frame that applies its Function
        workaround=lambda spec: dataclasses.replace(spec, forward_code="straight"),
    ),
    KnownIssue(
        id="inductor-complex-zero-dim-sum-is-a-view",
        title=("torch.compile with the inductor backend: the sum of two 0-dim complex tensors comes back as a view "
               "(its `_base` a 1-element tensor) where eager returns a fresh tensor: Inductor's complex add "
               "decomposition (torch/_inductor/decomposition.py, `add`) reshapes 0-dim operands to shape (1,) and "
               "returns `result[0]`"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:inductor",),
        reproducer="inductor_complex_zero_dim_sum_is_a_view.py",
        # related, not the same: #160495 and its fix #160736 (the reshape; before it, a crash), #172073
        upstream=(),
        kind="wrong metadata",
        trigger=lambda spec: bool(_complex_zero_dim_sums(spec)),
        witness=lambda spec, result, ms: any(_alias_of_a_complex_zero_dim_sum(spec, m) for m in ms),
        damage=_alias_of_a_complex_zero_dim_sum,
        damages="the alias relation (meta:forward alias:*) of those sums and of the outputs aliasing them",
        workaround=lambda spec: dataclasses.replace(spec, shape=(1,)),
    ),
)
