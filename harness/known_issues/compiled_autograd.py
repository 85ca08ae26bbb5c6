"""Compiled autograd (torch._dynamo.compiled_autograd): its entries, each beside its predicates."""

from __future__ import annotations

import dataclasses
import functools
import re

from harness.dataflow import Dataflow, base_ref, differentiable, reads
from harness.known_issues.entry import KnownIssue, crash_avoided, error_at, raised
from harness.known_issues.shared import (
    _NONE_ADDED,
    SECOND_ORDER_DAMAGES,
    _backward_runs,
    _functions_replaced,
    _held_by,
    _released_late_held_by,
    _second_order_damage,
    _second_order_differs,
    _vjp_as_backward,
    _vjp_backward_runs,
    _without_errors,
)
from harness.oracles import holders
from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import GraphSpec


def _retained_without_gradient(spec: GraphSpec) -> set[str]:
    """Non-leaf values with retain_grad() that Functions whose backward runs read, none of
    which sends them a gradient (every edge into them carries None)."""
    if spec.backward == "none":
        return set()
    flow = Dataflow(spec)
    return {h.target for h in spec.hooks if h.kind == "retain_grad" and not _is_whole_leaf(h.target)
            and any(flow.backward_runs(n) for n, _ in flow.edges_into(h.target))
            and not flow.receives_gradient(h.target)}


def _is_whole_leaf(ref: str) -> bool:
    return ref.startswith("x") and "[" not in ref


# --- compiled autograd ---------------------------------------------------------------------


#: hooks that watch a backward node's run (saved-tensor hooks watch the forward's saves)
_BACKWARD_HOOKS = ("tensor", "retain_grad", "pre", "post", "post_accumulate")


def _watched_region_under_compiled_autograd(spec: GraphSpec) -> bool:
    """dynamo runs the backward under compiled autograd (GraphSpec.compiled_backward), and a hook or
    retain_grad watches that backward."""
    return spec.compiled_backward and spec.backward != "none" and any(h.kind in _BACKWARD_HOOKS for h in spec.hooks)


def _region_skip_damage(spec: GraphSpec, m: Mismatch) -> bool:
    """A retained grad missing, or what a backward hook saw, at backward."""
    if m.checkpoint != "backward":
        return False
    if m.role.startswith("retained:"):
        return m.detail.startswith("got None")
    hook = re.fullmatch(r"hook(\d+)", m.role)
    return hook is not None and spec.hooks[int(hook[1])].kind in _BACKWARD_HOOKS


def _region_skipped(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The run sent no gradient to any leaf (so the compiled region's backward sent none to its
    inputs), and a retained grad or a backward hook differs."""
    grads = [t for role, t in result.tensors.get("backward", {}).items() if role.startswith(("grad:", "agrad:"))]
    return all(t is None for t in grads) and any(_region_skip_damage(spec, m) for m in mismatches)



def _none_gradient_meets_another(spec: GraphSpec) -> bool:
    """ca-none-gradient-accumulated's structure in the first backward, or in the second."""
    return _none_meets_another_in_first_backward(spec) or bool(_none_senders_in_second_backward(spec))


def _none_meets_another_in_first_backward(spec: GraphSpec) -> bool:
    return spec.backward != "none" and bool(Dataflow(spec).none_meets_another_gradient())


class _SecondBackwardNones:
    """Which gradients are None at run time in a double backward's second backward, as compiled
    autograd runs it.

    Unlike the first backward, where every output is in the loss, the second backward reaches
    only some outputs (`_second_backward_reach`), and an output whose every edge carries None
    gets None at run time. Compiled autograd materializes zeros (materialize_grads=True) only
    for an output no edge reaches while it captures the graph; a None that a traced edge
    carries at run time reaches the backward as None whatever materialize_grads says (a
    Function with materialize_grads=False gets None in both cases, as in eager): its
    `proxy_call_backward` binds a defined fake tensor to every result of a custom Function's
    backward (torch/_dynamo/compiled_autograd.py)."""

    def __init__(self, spec: GraphSpec) -> None:
        self.spec = spec
        self.flow = Dataflow(spec)
        self.entries = _second_backward_entries(spec)
        self.reached, self.run = _second_backward_reach(spec)
        self.gets_gradient = functools.cache(self._gets_gradient)

    def edges_into(self, ref: str) -> list[tuple[int, int]]:
        return [(n, s) for n in self.run for s, a in enumerate(self.spec.functions[n].args)
                if a.ref == ref and a.is_tensor_input]

    def _gets_gradient(self, ref: str) -> bool:
        """Does a defined gradient arrive at `ref`'s node at run time?"""
        return ref in self.entries or any(self.returns_gradient(n, s) for n, s in self.edges_into(ref))

    def output_gradient(self, n: int, k: int) -> bool:
        """Is the gradient Function n's backward gets for output k a tensor?"""
        ref = f"f{n}.{k}"
        return self.gets_gradient(ref) or self.spec.functions[n].materialize_grads and ref not in self.reached

    def returns_gradient(self, n: int, slot: int) -> bool:
        """Does Function n's backward return a tensor for this slot? (harness/generic.py
        `_backward`, the generic code, skips an output whose gradient is None whatever
        materialize_grads says, and a slot left without a term gets zeros when
        unused_grad="zeros"; harness/plain.py does so only with materialize_grads=False: with
        materialize_grads=True it uses an output's None as it comes, passed on as is or
        raising TypeError in arithmetic.)"""
        fn = self.spec.functions[n]
        readers = [k for k, o in enumerate(fn.outputs) if differentiable(fn, k)
                   and self.flow.requires_grad.get(f"f{n}.{k}", False) and reads(o.kind, o, slot)]
        if not fn.materialize_grads or fn.code == "generic":
            return fn.unused_grad == "zeros" or any(self.output_gradient(n, k) for k in readers)
        return all(self.output_gradient(n, k) for k in readers) if readers else fn.unused_grad == "zeros"

    def leaf_gets_gradient(self, i: int) -> bool:
        """Does a defined second-order gradient arrive at leaf x<i> (directly or by its views)?"""
        return self.gets_gradient(f"x{i}") or any(self.gets_gradient(f"x{i}[{j}]")
                                                  for j in range(self.spec.leaves[i].views))


def _none_senders_in_second_backward(spec: GraphSpec) -> frozenset[int]:
    """Functions that, in a double backward's second backward, return a None gradient for a
    value whose node also receives another gradient there (another edge of a Function the
    second backward runs, or the first-order graph's own edge when the value is one of its
    entries; for a view whose every edge carries None, its leaf's). Which gradients are None
    at run time: `_SecondBackwardNones`."""
    if spec.backward != "double":
        return frozenset()
    nones = _SecondBackwardNones(spec)

    def incoming(ref: str) -> int:
        count = len(nones.edges_into(ref)) + (ref in nones.entries)
        if ref.startswith("x") and "[" not in ref:  # each reached view of the leaf passes its gradient on
            count += sum(1 for j in range(spec.leaves[int(ref[1:])].views) if f"{ref}[{j}]" in nones.reached)
        return count

    senders: set[int] = set()
    for ref in nones.reached:
        edges = nones.edges_into(ref)
        none_from = {n for n, s in edges if not nones.returns_gradient(n, s)}
        passed_on = "[" in ref and ref not in nones.entries and len(none_from) == len(edges)  # the view's None
        if none_from and (incoming(ref) >= 2 or passed_on and incoming(base_ref(ref)) >= 2):
            senders |= none_from
    return frozenset(senders)


#: where compiled autograd captures a torch.compile'd region's backward (GraphSpec.compiled_backward),
#: the None reaches an aten op of AOT's backward graph, which compiled autograd copied into its own
_NONE_IN_COPIED_GRAPH = (r"Expected a proper Tensor but got None \(or an undefined Tensor in C\+\+\) "
                         r"for argument #\d+ '(self|other)'")


_NONE_ADDED_AT_BACKWARD = raised("backward", _NONE_ADDED, TypeError)
_NONE_IN_COPIED_GRAPH_AT_BACKWARD = raised("backward", _NONE_IN_COPIED_GRAPH, RuntimeError)
_NONE_ADDED_AT_DOUBLE_BACKWARD = raised("double_backward", _NONE_ADDED, TypeError)


def _none_added(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The TypeError of torch.add(None, g) (or, in AOT's backward graph copied in, an aten op's
    RuntimeError), at the backward whose structure the spec has."""
    first = (_NONE_ADDED_AT_BACKWARD(spec, result, mismatches)
             or spec.compiled_backward and _NONE_IN_COPIED_GRAPH_AT_BACKWARD(spec, result, mismatches))
    return (first and _none_meets_another_in_first_backward(spec)
            or _NONE_ADDED_AT_DOUBLE_BACKWARD(spec, result, mismatches) and bool(_none_senders_in_second_backward(spec)))


def _zeros_for_unused_inputs(spec: GraphSpec) -> GraphSpec:
    """Zeros instead of None from the Functions whose None gradient meets another one (in
    either backward)."""
    flow = Dataflow(spec)
    nones = flow.none_gradient_edges()
    senders = {n for ref in flow.none_meets_another_gradient() for n, _ in nones[ref]}
    senders |= _none_senders_in_second_backward(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, unused_grad="zeros")
                               if n in senders else fn)


def _unmaterialized_outputs(spec: GraphSpec) -> frozenset[str]:
    """Outputs of Functions with materialize_grads=True that compiled autograd hands None in a
    double backward's second backward, where eager gives zeros: an edge reaches the output
    while the graph is captured, and every such edge carries None at run time
    (`_SecondBackwardNones`). The first backward never does it: every output is in its loss."""
    if spec.backward != "double":
        return frozenset()
    nones = _SecondBackwardNones(spec)
    return frozenset(f"f{n}.{k}" for n in nones.run for k in spec.functions[n].tensor_outputs
                     if spec.functions[n].materialize_grads and f"f{n}.{k}" in nones.reached
                     and not nones.gets_gradient(f"f{n}.{k}"))


#: harness/plain.py's backward multiplies or adds the None it got (`g1 * 1.5`, `gx0 + g1`)
_NONE_OPERAND = r"unsupported operand type\(s\) for [*+]: '(NoneType' and '\w+|\w+' and 'NoneType)'"


def _second_order_none_for_eagers_zeros(spec: GraphSpec, m: Mismatch) -> bool:
    """A leaf's second-order gradient that is None where eager's is a tensor (its zeros), and
    that no defined gradient reaches under compiled autograd: the unmaterialized None passed on
    (the generic code skips it; plain code passes an as-is output's None on)."""
    leaf = re.fullmatch(r"dgrad:x(\d+)", m.role)
    return (leaf is not None and m.checkpoint == "double_backward" and m.against == "eager"
            and m.detail == "got None, expected a tensor" and bool(_unmaterialized_outputs(spec))
            and not _SecondBackwardNones(spec).leaf_gets_gradient(int(leaf[1])))


def _unmaterialized_none_seen(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    return (raised("double_backward", _NONE_OPERAND, TypeError)(spec, result, mismatches)
            or any(_second_order_none_for_eagers_zeros(spec, m) for m in mismatches))


def _unmaterialized_none_damage(spec: GraphSpec, m: Mismatch) -> bool:
    return m.role == "error" and m.checkpoint == "double_backward" or _second_order_none_for_eagers_zeros(spec, m)


def _zeros_into_unmaterialized_outputs(spec: GraphSpec) -> GraphSpec:
    """Zeros instead of None from the Functions whose None is an unmaterialized output's only
    gradient (along a chain of such outputs, from each of them: every edge then carries a
    tensor)."""
    nones = _SecondBackwardNones(spec)
    senders = {n for ref in _unmaterialized_outputs(spec) for n, _ in nones.edges_into(ref)}
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, unused_grad="zeros")
                               if n in senders else fn)


def _last_arg_is_tensor(spec: GraphSpec, n: int) -> bool:
    """The gradient a too-short backward leaves out belongs to a tensor input (whether or not it
    requires grad: compiled autograd indexes every tensor input's gradient)."""
    return spec.functions[n].args[-1].is_tensor_input  # (a tensor in a list is no input of the node)


def _too_few_gradients_for_a_tensor(spec: GraphSpec, n: int) -> bool:
    return spec.functions[n].error == "grad_count" and _last_arg_is_tensor(spec, n) and _backward_runs(spec, n)


def _unvalidated_gradients(spec: GraphSpec, n: int) -> bool:
    fn = spec.functions[n]
    return _backward_runs(spec, n) and (
        fn.error == "grad_for_nontensor" or fn.error == "grad_count" and not _last_arg_is_tensor(spec, n))


def _eager_raised_but_path_did_not(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    return result.status != "error" and any(
        m.against == "eager" and m.role == "error" and m.checkpoint == "backward"
        and re.search(r"eager raised RuntimeError at backward: function F(\d+)Backward returned "
                      r"(an incorrect number of gradients|a gradient different than None at position \d+, "
                      r"but the corresponding forward input was not a Variable)", m.detail)
        and _unvalidated_gradients(spec, int(re.search(r"function F(\d+)Backward", m.detail)[1]))
        for m in mismatches)


def _prehooked_functions_without_first_gradient(spec: GraphSpec) -> set[int]:
    """Functions with a node pre-hook whose node a backward runs with no gradient edge into its
    first output. The first backward reaches every output that requires grad (each is in the
    loss, harness/run.py `_loss`), so there the first output does not require grad. The second
    backward of a double backward runs a node that it enters through another output alone
    (`_second_backward_reach`; under `checkpoint` it runs the recomputed nodes, which carry no
    hooks). A None gradient sent along an edge does not count: compiled autograd traces the
    custom Function that sends it as returning a tensor."""
    flow = Dataflow(spec)
    hooked = {int(h.target[1:].split(".")[0]) for h in spec.hooks
              if h.kind == "pre" and h.target is not None and h.target.startswith("f")
              and flow.requires_grad.get(h.target, False)}
    without = {n for n in hooked if not flow.requires_grad.get(f"f{n}.0", False)}
    if spec.backward == "double" and not spec.checkpoint:
        reached, run = _second_backward_reach(spec)
        without |= {n for n in hooked & run if f"f{n}.0" not in reached}
    return without


def _without_those_prehooks(spec: GraphSpec) -> GraphSpec:
    bad = _prehooked_functions_without_first_gradient(spec)
    return dataclasses.replace(spec, hooks=tuple(
        h for h in spec.hooks if not (h.kind == "pre" and h.target is not None and h.target.startswith("f")
                                      and int(h.target[1:].split(".")[0]) in bad)))


def _double_backward_through_unpacked_saved_tensors(spec: GraphSpec) -> bool:
    """A double backward through saved tensors that saved-tensor hooks unpack: the spec's
    (detaching) hooks, or a non-reentrant checkpoint region's (which recompute, detached)."""
    flow = Dataflow(spec)
    return (spec.backward == "double" and (any(h.kind == "saved_tensors" for h in spec.hooks) or spec.checkpoint)
            and any(fn.nonlinear_slots and fn.save and flow.node_exists(n) for n, fn in enumerate(spec.functions)))


def _graph_retained_for_two_savers(spec: GraphSpec) -> bool:
    """The backward graph is retained for a second backward (retain_graph=True, or create_graph=True
    for a double backward), and it runs at least two Function nodes that saved tensors."""
    return (spec.backward in ("retain", "double")
            and sum(bool(fn.save) and _backward_runs(spec, n) for n, fn in enumerate(spec.functions)) >= 2)


def _graph_not_retained(spec: GraphSpec) -> GraphSpec:
    """A backward that does not retain its graph: the trigger is the retained graph itself (with
    or without the spec's saved-tensor hooks, which the standalone reproducer needs and one audit
    example did without), so only this avoids it."""
    return dataclasses.replace(spec, backward="backward")


def _without_saved_tensors_hooks(spec: GraphSpec) -> GraphSpec:
    return dataclasses.replace(spec, hooks=tuple(h for h in spec.hooks if h.kind != "saved_tensors"),
                               checkpoint=False)


def _second_backward_entries(spec: GraphSpec) -> frozenset[str]:
    """Values the double backward's graph enters the forward graph by: the second backward
    (harness/run.py: autograd.grad of the weighted first-order gradients of the chosen leaves)
    reaches forward values only through the saved inputs that generated backwards compute
    nonlinear derivatives from (harness/generic.py `_backward`: `g * c * deriv(saved input)`),
    and only where that term reaches a chosen leaf's gradient. Each gets a (defined) gradient."""
    flow = Dataflow(spec)
    chosen = set(spec.grad_leaves) or {i for i, leaf in enumerate(spec.leaves) if leaf.requires_grad}

    @functools.cache
    def reaches_chosen(ref: str) -> bool:
        """Does a chosen leaf's first-order gradient depend on the gradient arriving at `ref`?"""
        if not flow.requires_grad.get(ref, False):
            return False
        if ref.startswith("x"):
            return int(base_ref(ref)[1:]) in chosen
        n, k = (int(part) for part in ref[1:].split("."))
        fn = spec.functions[n]
        out = fn.outputs[k]
        return any(reads(out.kind, out, s) and reaches_chosen(a.ref)
                   for s, a in enumerate(fn.args) if a.is_tensor_input)

    entries: set[str] = set()
    for m, fn in enumerate(spec.functions):
        if "inputs" not in fn.save or not flow.backward_runs(m):
            continue  # derivatives from intermediates are saved without a graph
        for k, out in enumerate(fn.outputs):
            if out.kind == "compute" and flow.requires_grad.get(f"f{m}.{k}", False):
                entries |= {fn.args[t.slot].ref for t in out.terms
                            if t.op != "linear" and fn.args[t.slot].is_tensor_input
                            and reaches_chosen(fn.args[t.slot].ref)}
    return frozenset(entries)


def _second_backward_reach(spec: GraphSpec) -> tuple[frozenset[str], frozenset[int]]:
    """(values with a gradient edge in the double backward's graph, Functions whose node it runs).

    From its entries (`_second_backward_entries`) the second backward runs the forward graph's
    nodes again, like a first backward from those values: a node runs when an edge reaches one
    of its outputs and it leads to a chosen leaf (`backward_runs`), and then it has an edge into
    each of its inputs that requires grad (a None gradient is still an edge)."""
    flow = Dataflow(spec)
    reached = set(_second_backward_entries(spec))
    run: set[int] = set()
    for n in reversed(range(len(spec.functions))):  # a Function reads only earlier values
        fn = spec.functions[n]
        if flow.backward_runs(n) and any(f"f{n}.{k}" in reached for k in fn.tensor_outputs):
            run.add(n)
            reached |= {a.ref for a in fn.args if a.is_tensor_input and flow.requires_grad[a.ref]}
    return frozenset(reached), frozenset(run)


def _tensor_hooked_outputs_without_second_order_edge(spec: GraphSpec) -> frozenset[str]:
    """Function outputs with a tensor hook whose node the double backward runs while no edge of
    it reaches that output. (The first backward reaches every Function output that requires
    grad: each is in the loss, harness/run.py `_loss`. Under `checkpoint` the saved inputs are
    recomputed, so the second backward runs the recomputed nodes, which carry no hooks.)"""
    if spec.backward != "double" or spec.checkpoint:
        return frozenset()
    reached, run = _second_backward_reach(spec)
    flow = Dataflow(spec)
    return frozenset(h.target for h in spec.hooks
                     if h.kind == "tensor" and h.target.startswith("f") and flow.requires_grad[h.target]
                     and int(h.target[1:].split(".")[0]) in run and h.target not in reached)


def _tensor_hooked_without_gradient_under_compiled_region(spec: GraphSpec) -> frozenset[str]:
    """Values with a tensor hook that no Function's backward sends a gradient (every edge into them
    carries None), where compiled autograd captures the backward of a compiled region
    (GraphSpec.compiled_backward): AOT's backward returns None for such an input of the region,
    and the hook is traced with it."""
    if not spec.compiled_backward:
        return frozenset()
    flow = Dataflow(spec)
    return frozenset(h.target for h in spec.hooks if h.kind == "tensor" and flow.requires_grad.get(h.target, False)
                     and flow.edges_into(h.target) and not flow.receives_gradient(h.target))


def _tensor_hooks_traced_with_none(spec: GraphSpec) -> frozenset[str]:
    """ca-tensor-hook-unreached-output's hooked values: in a double backward, or under a compiled region."""
    return _tensor_hooked_outputs_without_second_order_edge(spec) | _tensor_hooked_without_gradient_under_compiled_region(
        spec)


def _without_those_tensor_hooks(spec: GraphSpec) -> GraphSpec:
    bad = _tensor_hooks_traced_with_none(spec)
    return dataclasses.replace(spec, hooks=tuple(h for h in spec.hooks if not (h.kind == "tensor" and h.target in bad)))


def _a_function_backward_runs(spec: GraphSpec) -> bool:
    return any(_backward_runs(spec, n) for n in range(len(spec.functions)))


ENTRIES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="ca-none-gradient-accumulated",
        title=("Compiled autograd: a custom Function's backward returns None for an input whose "
               "gradient also arrives along another edge; the captured graph sums them with "
               "torch.add(None, g) and raises TypeError (eager skips undefined gradients); also in a double "
               "backward's second backward, where a Function with materialize_grads=False gets None for the "
               "outputs it does not reach; and where compiled autograd captures a torch.compile'd region's "
               "backward, the None reaches an aten op of AOT's backward graph copied into its own (RuntimeError "
               "'Expected a proper Tensor but got None')"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),  # every mode; torch.compile modes raise it from fake tensors
        reproducer="ca_none_gradient_accumulated.py",
        upstream=(),
        related=("pytorch/pytorch#105811 (a closed 2023 pull request on undefined gradients in compiled autograd)",),
        kind="crash",
        trigger=_none_gradient_meets_another,
        witness=_none_added,
        damage=error_at("backward", "double_backward"),
        damages="the error at backward (at double_backward for the second-backward form)",
        workaround=_zeros_for_unused_inputs,
    ),
    KnownIssue(
        id="ca-runtime-none-not-materialized",
        title=("Compiled autograd: a custom Function with materialize_grads=True gets None for an output "
               "whose only gradient is a None another Function's backward returns at run time (eager "
               "gives zeros); in the harness in a double backward's second backward"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),  # every mode; torch.compile modes raise it from fake tensors
        reproducer="ca_runtime_none_not_materialized.py",
        upstream=(),
        related=(),
        kind="crash",
        trigger=lambda spec: bool(_unmaterialized_outputs(spec)),
        witness=_unmaterialized_none_seen,
        damage=_unmaterialized_none_damage,
        damages=("the error at double_backward; a leaf's second-order gradient (dgrad) that is None where "
                 "eager's is a tensor"),
        workaround=_zeros_into_unmaterialized_outputs,
    ),
    KnownIssue(
        id="ca-function-backward-unvalidated",
        title=("Compiled autograd does not validate a custom Function's backward results: a wrong "
               "number of gradients (the missing one a non-tensor input's), or a gradient for a non-tensor input, raises in "
               "eager and passes silently under compiled autograd"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_function_backward_unvalidated.py",
        upstream=(),
        related=(),
        kind="missing error",
        trigger=lambda spec: any(_unvalidated_gradients(spec, n) for n in range(len(spec.functions))),
        witness=_eager_raised_but_path_did_not,
        damage=lambda spec, m: m.role == "error" and m.checkpoint == "backward" and m.against == "eager",
        damages="the missing error at backward (compared with eager's)",
        workaround=_without_errors(lambda n, fn: fn.error in ("grad_count", "grad_for_nontensor")),
    ),
    KnownIssue(
        id="ca-too-few-gradients-indexerror",
        title=("Compiled autograd: a custom Function's backward returns too few gradients, the "
               "missing one a tensor input's; eager raises 'returned an incorrect number of gradients', compiled "
               "autograd an IndexError (tuple/list index out of range)"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_too_few_gradients_indexerror.py",
        upstream=(),
        related=(),
        kind="missing error",
        trigger=lambda spec: any(_too_few_gradients_for_a_tensor(spec, n) for n in range(len(spec.functions))),
        witness=raised("backward", r"^(tuple|list) index out of range$", IndexError),
        damage=error_at("backward"),
        damages="the error at backward",
        workaround=_without_errors(lambda n, fn: fn.error == "grad_count"),
    ),
    KnownIssue(
        id="ca-retain-grad-none-gradient-segfault",
        title=("Compiled autograd: retain_grad() on a non-leaf tensor (a view of a leaf) whose every incoming "
               "gradient is None (a custom Function's backward returns None for it) segfaults in the backward: "
               "call_cpp_tensor_pre_hooks calls VariableHooks::retain_grad's hook on the undefined gradient; "
               "eager skips it"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_retain_grad_none_gradient_segfault.py",
        upstream=(),
        related=("pytorch/pytorch#11751 (closed, 2018: the same segfault class in eager autograd, fixed by #12028)",),
        kind="crash",
        trigger=lambda spec: bool(_retained_without_gradient(spec)),
        witness=crash_avoided("ca-retain-grad-none-gradient-segfault"),
        damage=error_at("backward"),
        damages="the whole run (not run: it would crash the process)",
        workaround=lambda spec: dataclasses.replace(spec, hooks=tuple(
            h for h in spec.hooks if not (h.kind == "retain_grad" and h.target in _retained_without_gradient(spec)))),
        crashes_at="backward",
    ),
    KnownIssue(
        id="ca-invalid-gradient-message",
        title=("Compiled autograd: a gradient of the wrong shape raises as in eager, but the message "
               "drops which node returned it ('[Compiled Autograd Tracing:]invalid gradient at index "
               "0 ...' instead of 'Function FBackward returned an invalid gradient at index 0 ...')"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_invalid_gradient_message.py",
        upstream=(),
        related=(),
        kind="missing error",
        trigger=lambda spec: any(fn.error == "grad_shape" and _backward_runs(spec, n)
                                 for n, fn in enumerate(spec.functions)),
        witness=raised("backward", r"^\[Compiled Autograd Tracing:\]invalid gradient at index \d+ - got .* "
                                   r"but expected shape compatible with", RuntimeError),
        damage=error_at("backward"),
        damages="the error message at backward",
        workaround=_without_errors(lambda n, fn: fn.error == "grad_shape"),
    ),
    KnownIssue(
        id="ca-prehook-unused-first-gradient",
        title=("Compiled autograd: a node pre-hook on a custom Function whose first output gets no "
               "gradient (non-tensor or non-differentiable, or not reached by a double backward's second "
               "backward that runs the node) crashes reorder_pre_hook_nodes_to_mimic_eager with a bare "
               "StopIteration"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_prehook_unused_first_gradient.py",
        upstream=(),
        related=(
            "pytorch/pytorch#138553 (the pull request that added reorder_pre_hook_nodes_to_mimic_eager, where it raises)",
        ),
        kind="crash",
        trigger=lambda spec: spec.backward != "none" and bool(_prehooked_functions_without_first_gradient(spec)),
        witness=raised("backward", r"^$", StopIteration),
        damage=error_at("backward"),
        damages="the error at backward (where the path reports the second backward's too)",
        workaround=_without_those_prehooks,
    ),
    KnownIssue(
        id="ca-unpack-hook-create-graph",
        title=("Compiled autograd with create_graph=True ignores the autograd identity of saved "
               "tensors whose pack hook detached them (eager restores it on unpack): second-order "
               "gradients through saved tensors are silently lost; so under a non-reentrant checkpoint, "
               "whose hooks recompute them detached"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_unpack_hook_create_graph.py",
        upstream=(),
        related=("pytorch/pytorch#153222 (a closed pull request: higher-order gradients under compiled autograd)",),
        kind="silent wrong result",
        trigger=_double_backward_through_unpacked_saved_tensors,
        witness=_second_order_differs,
        damage=_second_order_damage,
        damages=SECOND_ORDER_DAMAGES,
        workaround=_without_saved_tensors_hooks,
    ),
    KnownIssue(
        id="ca-retained-saved-tensors-guard",
        title=("Compiled autograd handing its graph to torch.compile, with the graph retained (retain_graph=True, "
               "or create_graph=True): when two custom Function nodes saved tensors (reproduced standalone "
               "through a detaching saved_tensors_hooks pack hook; seen in an audit without hooks too), Dynamo "
               "fails its own guard on the captured backward graph (AssertionError 'Guard failed on the same "
               "frame it was created ... Duplicate tensors found: [\"hooks[1].saved_tensors[0]\", ...]', "
               "hooks[i] being the Functions' ctx)"),
        first=(2, 13, 0), last=None,
        paths=("compiled:eager", "compiled:aot_eager", "compiled:inductor"),  # capture runs it
        reproducer="ca_retained_saved_tensors_guard.py",
        upstream=(),
        related=(
            "pytorch/pytorch#129938 (open, needs a reproduction: the same 'Duplicate tensors found' guard failure on a backward run twice; likely the same root)",
        ),
        kind="crash",
        trigger=_graph_retained_for_two_savers,
        witness=raised("backward", r"^Guard failed on the same frame it was created\..*Duplicate tensors found: "
                                   r"\[\"hooks\[\d+\]\.saved_tensors\[\d+\]\"", AssertionError),
        damage=error_at("backward"),
        damages="the error at backward",
        workaround=_graph_not_retained,
    ),
    KnownIssue(
        id="ca-tensor-hook-unreached-output",
        title=("Compiled autograd: a tensor hook on one output of a multi-output node (a custom Function) "
               "that the backward runs without a gradient edge into that output is traced with None, and "
               "reorder_tensor_pre_hook_nodes raises AttributeError \"'NoneType' object has no attribute "
               "'op'\" (is_placeholder(None)); eager calls the hook with None. Also where compiled autograd "
               "captures a torch.compile'd region's backward and a tensor hook is on an input the region's "
               "backward returns None for"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_tensor_hook_unreached_output.py",
        upstream=(),
        related=(),
        kind="crash",
        trigger=lambda spec: bool(_tensor_hooks_traced_with_none(spec)),
        witness=raised("backward", r"^'NoneType' object has no attribute 'op'$", AttributeError),
        damage=error_at("backward"),  # the path reports every compiled-autograd error at backward
        damages="the error at backward (raised by the double backward's capture, or the compiled region's)",
        workaround=_without_those_tensor_hooks,
    ),
    KnownIssue(
        id="ca-eager-backend-pins-inputs",
        title=("Compiled autograd with torch.compile(backend='eager'): the compiled backward graph keeps "
               "the real input list of its first call as the inputs placeholder's meta['example_value'], "
               "so the leaves, saved tensors and arguments of that backward stay alive until "
               "torch._dynamo.reset()"),
        first=(2, 13, 0), last=None,
        paths=("compiled:eager",),
        reproducer="ca_eager_backend_pins_inputs.py",
        upstream=(),
        related=(
            "pytorch/pytorch#119607 (closed: a CUDA memory leak with torch.compile's eager backend)",
            "pytorch/pytorch#125511 (open: eager-backend memory)",
        ),
        kind="leak",
        trigger=lambda spec: spec.backward != "none",
        # the holder is told apart: a leak is this bug's only where emptying that placeholder's
        # example value frees the tensor (harness/oracles/holders.py)
        witness=_held_by(holders.STOLEN_INPUTS),
        damage=_released_late_held_by(holders.STOLEN_INPUTS),
        damages=("the release checks (drop_outputs use counts, drop_all leaks, and their comparison with eager's) "
                 "of the tensors that placeholder holds"),
        workaround=lambda spec: spec,  # the backend is the trigger: no spec avoids it
        any_function=True,
    ),
    KnownIssue(
        id="ca-dynamo-function-ctx-cycle",
        title=("Compiled autograd handing its graph to torch.compile: Dynamo traces a custom Function's "
               "backward with its real ctx, which a leftover SideEffects object keeps in a reference "
               "cycle, so the leaves behind the Function hold an extra reference and die only under "
               "gc.collect()"),
        first=(2, 13, 0), last=None,
        paths=("compiled:eager", "compiled:aot_eager", "compiled:inductor"),
        reproducer="ca_dynamo_function_ctx_cycle.py",
        upstream=(
            "pytorch/pytorch#195866 (the same SideEffects reference cycle, reached through __dict__ in a higher-order op body)",
            "pytorch/pytorch#195954 (its fix, a closed pull request)",
        ),
        related=(),
        kind="leak",
        trigger=_a_function_backward_runs,
        # the holder is told apart: a cycle is this bug's only where the tensor dies once Dynamo's
        # variables let go of the real ctx (harness/oracles/holders.py)
        witness=_held_by(holders.DYNAMO_CTX),
        damage=_released_late_held_by(holders.DYNAMO_CTX),
        damages=("the release checks (drop_outputs use counts, drop_all reference cycles, and their comparison "
                 "with eager's) of the tensors that the real ctx Dynamo keeps holds; never a leak"),
        workaround=lambda spec: spec,  # every custom Function's backward: no spec avoids it
        any_function=True,
    ),
    KnownIssue(
        id="ca-function-vjp-ignored",
        title=("Compiled autograd calls a custom Function's `backward` directly "
               "(torch/_dynamo/external_utils.py call_backward), ignoring a `vjp` defined instead, its "
               "documented alias: NotImplementedError 'You must implement either the backward or vjp method'"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_function_vjp_ignored.py",
        upstream=("pytorch/pytorch#191498 (open draft pull request)",),
        related=(),
        kind="crash",
        trigger=_vjp_backward_runs,
        witness=raised("backward", r"^You must implement either the backward or vjp method", NotImplementedError),
        damage=error_at("backward"),
        damages="the error at backward",
        workaround=_vjp_as_backward,
    ),
    KnownIssue(
        id="ca-aot-region-without-input-gradient-skipped",
        title=("Compiled autograd over a torch.compile'd region skips the region's backward node (AOT's "
               "CompiledFunctionBackward) where it sends no gradient to any of its inputs (a custom Function's "
               "backward returns None): retain_grad on the region's outputs keeps None, and post-accumulate-grad "
               "hooks of the leaves behind it are never called (eager, and each alone, run it)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),  # backend eager has no AOT node: it runs right
        reproducer="ca_aot_region_without_input_gradient_skipped.py",
        upstream=(),
        related=("pytorch/pytorch#91468 (open: retain_grad and hooks called inside a compiled region are lost; "
                 "here they are registered outside it, and only compiled autograd loses them)",),
        kind="silent wrong result",
        trigger=_watched_region_under_compiled_autograd,
        witness=_region_skipped,
        damage=_region_skip_damage,
        damages="retained grads that are None at backward, and what backward hooks saw",
        workaround=lambda spec: dataclasses.replace(spec, compiled_backward=False),
    ),
    KnownIssue(
        id="ca-captured-graph-leaked",
        title=("Compiled autograd never frees a captured backward graph: _compiled_autograd_impl "
               "(torch/csrc/dynamo/python_compiled_autograd.cpp) keeps the (runtime_wrapper, compiled_fn) tuple that "
               "AutogradCompilerInstance.end_capture returns without releasing it, so every capture's FX graph, "
               "tracer, ShapeEnv and fake tensors stay alive after torch._dynamo.reset() and gc.collect() (about "
               "2.5 MB an example in a campaign; no custom Function needed)"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_captured_graph_leaked.py",
        upstream=(),
        kind="leak",
        # every backward compiled autograd captures (the path resets its cache before each example)
        trigger=lambda spec: spec.backward != "none",
        # what it holds is torch's capture state, not the example's tensors: no result of an example
        # shows it, so it explains no mismatch; its reproducer (run by `known`) is its witness, and a
        # campaign worker retires when the memory it keeps passes --worker-memory (docs/worker_memory.md)
        witness=lambda spec, result, ms: False,
        damage=lambda spec, m: False,
        damages="none: no result of an example (the process's memory grows)",
        workaround=lambda spec: spec,
    ),
    KnownIssue(
        id="ca-capture-error-leaks-compile-context",
        title=("Compiled autograd: a capture that raises (between AutogradCompilerInstance.begin_capture and "
               "end_capture, e.g. ca-tensor-hook-unreached-output) never leaves the compile context "
               "begin_capture entered by hand: the thread's compile context stays set outside any compile, "
               "and when the collector finalizes the abandoned context manager it resets the thread's context "
               "to None, inside whatever compile runs then (\"AssertionError: compile_context is not set\" "
               "once that compile restarts its analysis)"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_capture_error_leaks_compile_context.py",
        upstream=(),
        related=("pytorch/pytorch#141907 (the pull request that added the context; its review asked whether "
                 "an exception midway leaks it)",),
        kind="crash",
        # every backward compiled autograd captures can raise midway (the registry's capture errors)
        trigger=lambda spec: spec.backward != "none",
        # the harness closes the abandoned context after every compiled run (harness/paths/compiled.py,
        # close_abandoned_compile_context), so no later example is judged on it and no result shows it;
        # its reproducer (run by `known`) is its witness
        witness=lambda spec, result, ms: False,
        damage=lambda spec, m: False,
        damages="none: no result of an example (a later compile in the process, which the harness protects)",
        workaround=lambda spec: spec,
    ),
)
