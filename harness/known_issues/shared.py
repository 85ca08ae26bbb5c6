"""Predicates and workarounds that entries of several modules use."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from harness.dataflow import Dataflow, base_ref, chosen_leaves, has_backward, reads
from harness.known_issues.entry import Damage, Witness, Workaround
from harness.oracles.compare import Mismatch
from harness.oracles.lifetimes import RELEASE_CHECKPOINTS, held_by
from harness.run import RunResult
from harness.spec import FunctionSpec, GraphSpec, OutputSpec, Term


def _functions_replaced(spec: GraphSpec, change: Callable[[int, FunctionSpec], FunctionSpec]) -> GraphSpec:
    return dataclasses.replace(spec, functions=tuple(change(n, fn) for n, fn in enumerate(spec.functions)))


def _without_errors(which: Callable[[int, FunctionSpec], bool]) -> Workaround:
    return lambda spec: _functions_replaced(
        spec, lambda n, fn: dataclasses.replace(fn, error=None) if which(n, fn) else fn)


def _breaks_the_graph_itself(fn: FunctionSpec) -> bool:
    """Dynamo cannot trace this Function's apply as a whole: a user jvp, a `vjp` instead of
    `backward` ("Unsupported custom vjp"), one tensor passed twice as a tensor input (inside a list
    it is no input, and Dynamo traces it whole), or a print or a branch on a tensor's value in its
    forward (a Python side effect it traces; the dynamo audits)."""
    refs = [a.ref for a in fn.args if a.is_tensor_input and not a.clone]
    return (fn.jvp or fn.backward_method == "vjp" or len(refs) != len(set(refs))
            or fn.untraceable in ("print", "data_branch"))


def _inputs_returned_without_grad(spec: GraphSpec) -> set[str]:
    """Outputs that return an input as-is from a Function none of whose inputs requires grad
    (Dynamo returns the input itself, eager a view of it: dynamo-input-returned-as-is-not-a-view)."""
    flow = Dataflow(spec)
    return {f"f{n}.{k}" for n, fn in enumerate(spec.functions) if not flow.node_exists(n)
            for k, o in enumerate(fn.outputs) if o.kind == "input"}


def _given_one_tensor_twice_under_dynamo(spec: GraphSpec) -> set[int]:
    """The Functions given one tensor twice under Dynamo alone (its graph break "duplicate tensor
    input"): an argument is an input another Function returned as-is without grad, which Dynamo
    hands back as that input itself, beside that input. A tensor inside a list is no tensor input
    and counts for neither copy."""
    as_is = _inputs_returned_without_grad(spec)

    def source(ref: str) -> str:
        while ref in as_is:
            m, _, k = ref[1:].partition(".")
            ref = spec.functions[int(m)].args[spec.functions[int(m)].outputs[int(k)].slot].ref
        return ref
    twice = set()
    for n, fn in enumerate(spec.functions):
        refs = [source(a.ref) for a in fn.args if a.is_tensor_input and not a.clone]
        if len(refs) != len(set(refs)):
            twice.add(n)
    return twice


def _backward_runs(spec: GraphSpec, n: int) -> bool:
    """Function n's backward is called (a backward runs, and it reaches Function n)."""
    return spec.backward != "none" and Dataflow(spec).backward_runs(n)


def _vjp_backward_runs(spec: GraphSpec) -> bool:
    """A Function that defines `vjp` instead of `backward` has its backward called."""
    return any(fn.backward_method == "vjp" and _backward_runs(spec, n) for n, fn in enumerate(spec.functions))


def _vjp_as_backward(spec: GraphSpec) -> GraphSpec:
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, backward_method="backward"))


def _aliases_of(spec: GraphSpec, refs: frozenset[str]) -> frozenset[str]:
    """`refs` and the Function outputs that alias one of them (a view, the input as-is or
    modified in place, of the value itself, not of a clone), transitively."""
    aliases = set(refs)
    for n, fn in enumerate(spec.functions):
        aliases |= {f"f{n}.{k}" for k, o in enumerate(fn.outputs) if o.kind in ("view", "input", "dirty")
                    and not fn.args[o.slot].clone and fn.args[o.slot].ref in aliases}
    return frozenset(aliases)


def _gradient_record_of(spec: GraphSpec, values: frozenset[str], m: Mismatch) -> bool:
    """A gradient-side record at backward of one of `values`: a leaf's .grad (also after a
    second backward, or from autograd.grad), a retained grad, what a hook on it saw, and
    their strides."""
    if m.checkpoint not in ("backward", "meta:backward"):
        return False
    role = m.role.removeprefix("stride:")
    kind, _, ref = role.partition(":")
    if kind in ("grad", "grad2", "agrad", "retained"):
        return ref in values
    hook = re.fullmatch(r"hook(\d+)(\.grad\d+)?", role)
    return hook is not None and spec.hooks[int(hook[1])].target in values


#: compiled autograd sums a None gradient with another one in the captured graph
_NONE_ADDED = r"argument '(input|other)' \(position [12]\) must be Tensor, not NoneType"


# --- forward-mode AD -------------------------------------------------------------------------


def _aliasing_output_as_copy(spec: GraphSpec, sites: Callable[[GraphSpec], tuple[tuple[int, int], ...]]
                             ) -> GraphSpec:
    """Replace the aliasing outputs at `sites` by computed copies (same value, no alias),
    until no site is left: the smallest change that keeps every other output and tangent."""
    for _ in range(sum(len(fn.outputs) for fn in spec.functions)):
        found = sites(spec)
        if not found:
            return spec
        n, k = found[0]
        fn = spec.functions[n]
        out = fn.outputs[k]
        copy = OutputSpec("compute", terms=(Term(out.slot, "linear", out.coeff if out.kind == "dirty" else 1.0),))
        outputs = fn.outputs[:k] + (copy,) + fn.outputs[k + 1:]
        args = fn.args
        if out.kind == "dirty":  # no longer modified in place: read the value itself
            args = args[:out.slot] + (args[out.slot].uncloned(),) + args[out.slot + 1:]
        spec = _functions_replaced(spec, lambda m, f: dataclasses.replace(
            f, outputs=outputs, args=args) if m == n else f)
    return spec


def _version_error_not_raised(result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The path ran through the backward where the math oracle says torch's version-counter
    error must stop it (harness/check.py `_against_math`)."""
    return result.status != "error" and any(
        m.role == "error" and m.checkpoint == "backward"
        and m.detail.startswith("ran without torch's version-counter error") for m in mismatches)


def _held_by(*holders: str) -> Witness:
    """The lifetime oracle found a tensor alive after every reference was dropped, and one of
    these torch objects held it (harness/oracles/holders.py: took it away and the tensor died,
    or saw it reach the tensor)."""
    return lambda spec, result, mismatches: bool(result.holders.named() & set(holders))


def _released_late_held_by(*holders: str) -> Damage:
    """A release check (a use count at drop_outputs, a leak or a cycle at drop_all, and their
    comparison with eager's) whose every tensor these torch objects held: a Function that keeps
    its own inputs, or puts its ctx in a cycle of its own, is held by something else and fails."""
    def damage(spec: GraphSpec, m: Mismatch) -> bool:
        found = held_by(m)
        return m.checkpoint in RELEASE_CHECKPOINTS and bool(found) and found <= set(holders)
    return damage


def _returned_as_tuples(which: Callable[[GraphSpec], set[int]]) -> Workaround:
    """Those Functions return their one output as a one-element tuple."""
    def workaround(spec: GraphSpec) -> GraphSpec:
        bad = which(spec)
        return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, tuple_output=True) if n in bad else fn)
    return workaround


def _ref_of(role: str) -> str:
    return role.split(":", 1)[1] if ":" in role else role


_DOCUMENTED_BACKWARD_ERROR = re.compile(
    r"[Ff]unction \w+Backward returned (an incorrect number of gradients|a gradient different than None at "
    r"position \d+, but the corresponding forward input was not a Variable|an invalid gradient at index \d+)")


def _invalid_backward_runs(spec: GraphSpec) -> bool:
    return any(fn.error is not None and _backward_runs(spec, n) for n, fn in enumerate(spec.functions))


def _second_order_differs(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """A second-order gradient (double_backward dgrad:*) differs: the witness of a lost second order."""
    return any(m.checkpoint == "double_backward" and m.role.startswith("dgrad:") for m in mismatches)


def _second_order_damage(spec: GraphSpec, m: Mismatch) -> bool:
    """Second-order gradients, and retained grads and tensor hooks, which also see the second
    backward's (lost) contributions."""
    return m.checkpoint == "double_backward" and m.role.startswith("dgrad:") or (
        m.checkpoint == "backward" and m.role.startswith(("retained:", "hook")))


SECOND_ORDER_DAMAGES = ("second-order gradients (double_backward dgrad:*), and retained grads and hook-seen "
                        "gradients at backward, which the second backward adds to")


# --- Functions under torch.compile of a torch.func transform -------------------------------


def _func_dynamo_gradient_inputs(spec: GraphSpec, path: str) -> tuple[set[int], bool] | None:
    """How a `func.<transform>+dynamo` path (harness/paths/func.py) runs the graph forward inside a
    reverse-mode transform: (the leaves it differentiates, whether the forward runs under vmap too), or None
    where the forward runs under no reverse-mode transform (jvp, vmap; jacfwd and grad(vmap), whose
    forward sees a BatchedTensor, where eager runs a backward). Where eager runs none, the gradient
    paths run the forward under vjp of every float leaf. Under grad(vmap) a leaf the batch shares
    (GraphSpec.batch_shared) is no BatchedTensor: grad's differentiated leaves among them are what
    the forward sees of the reverse-mode transform."""
    transform = path.partition("@")[0].removeprefix("func.").removesuffix("+dynamo")
    backward = has_backward(spec)
    if transform == "grad_vmap" and backward:
        shared = set(chosen_leaves(spec)) & set(spec.batch_shared)
        return (shared, True) if shared else None
    if transform not in ("grad", "vjp", "jacrev", "vmap_grad") and (
            backward or transform not in ("grad_vmap", "jacfwd")):
        return None
    leaves = set(chosen_leaves(spec)) if backward else {i for i, leaf in enumerate(spec.leaves) if leaf.dtype is None}
    return leaves, transform in ("vmap_grad", "grad_vmap")


def _stops_tracing_as_function_apply(fn: FunctionSpec) -> bool:
    """Dynamo ends its trace at this Function where it would make it an autograd_function_apply op
    (the checks of call_apply, checked for the op only): it breaks the graph itself (a user jvp or
    vjp, one tensor twice, a print or a branch), returns the in-place op's result of a dirty input
    (dynamo-mark-dirty-inplace-result), is generic, whose class body Dynamo cannot read
    (dynamo-function-closure-object), or has a side effect in its forward
    (func-dynamo-side-effect-fake-tensor's assertion)."""
    dirty_result = fn.dirty_return == "result" and any(o.kind == "dirty" for o in fn.outputs)
    return (_breaks_the_graph_itself(fn) or fn.untraceable == "side_effect" or fn.code == "generic"
            or dirty_result)


@dataclasses.dataclass(frozen=True)
class FunctionApplyTrace:
    """What torch.compile makes of the graph's Functions inside a reverse-mode torch.func transform
    (`_function_apply_trace`)."""

    #: the Functions traced as autograd_function_apply ops, in order, up to where tracing ends
    traced: tuple[int, ...]
    #: every value up to there: does it require grad at the transform's level?
    requires: dict[str, bool]
    #: ... and does Dynamo see it requiring grad (a transform input, passed as is, does not)?
    seen: dict[str, bool]
    #: the Function Dynamo set out to make an op of where its trace ended there, or None
    stopped_at: int | None = None


def _function_apply_trace(spec: GraphSpec, differentiated: set[int]) -> FunctionApplyTrace:
    """The Functions torch.compile traces into the autograd_function_apply higher-order op inside a
    reverse-mode torch.func transform of these leaves, in order, up to the first graph break.

    Dynamo traces a Function applied with grad mode on to an input it sees requiring grad into that
    op (torch/_dynamo/variables/misc.py, AutogradFunctionVariable.call_apply: its forward and
    backward are traced at once) and inlines the others' forward, rules and marks dropped
    (func-dynamo-custom-rules-dropped). Inside the transform it sees a tensor computed from a
    differentiated leaf (a view, a clone, an inlined Function's output) requiring grad, but not the
    leaf itself (a transform input reports requires_grad=False). Tracing ends at such a Function
    that `_stops_tracing_as_function_apply`, and at a print or branch in any forward."""
    requires = {ref: int(base_ref(ref)[1:]) in differentiated for ref in spec.value_refs() if ref.startswith("x")}
    seen = {ref: "[" in ref and requires[ref] for ref in requires}
    traced: list[int] = []
    stopped_at = None

    def arg_seen(ref: str, clone: bool) -> bool:
        return requires[ref] if clone else seen[ref]
    for n, fn in enumerate(spec.functions):
        as_op = fn.api == "function" and fn.grad_mode == "enabled" and any(
            arg_seen(a.ref, a.clone) for a in fn.args if a.ref is not None)
        if as_op and _stops_tracing_as_function_apply(fn) or fn.untraceable in ("print", "data_branch"):
            stopped_at = n if as_op else None
            break  # (an inlined forward's print or branch breaks the graph too)
        if as_op:
            traced.append(n)
        for k, o in enumerate(fn.outputs):
            if o.kind == "const":
                continue
            read = [fn.args[t.slot] for t in o.terms] if o.kind == "compute" else [fn.args[o.slot]]
            ref = f"f{n}.{k}"
            requires[ref] = fn.grad_mode == "enabled" and any(requires[a.ref] for a in read if a.ref is not None)
            # an input returned as-is is the same tensor. The op's other outputs all require grad, as a
            # Function's do where any input does (unless marked non-differentiable: the op's
            # non_differentiable_idx), whatever they read: a view of an input without grad too
            if o.kind == "input":
                seen[ref] = arg_seen(fn.args[o.slot].ref, fn.args[o.slot].clone)
            else:
                seen[ref] = not o.non_differentiable if as_op else requires[ref]
    return FunctionApplyTrace(tuple(traced), requires, seen, stopped_at)


def _traced_under_func_dynamo(spec: GraphSpec, path: str) -> list[int]:
    """`_function_apply_trace`'s ops on a func+dynamo path; under vmap only the first (its op has no vmap
    rule, so it raises func-dynamo-vmap-grad-apply-template, unless its own backward's trace raised
    first: too few gradients, dynamo-function-backward-checked-differently)."""
    how = _func_dynamo_gradient_inputs(spec, path)
    if how is None:
        return []
    traced = list(_function_apply_trace(spec, how[0]).traced)
    return traced[:1] if how[1] else traced


def _eager_backward_runs(spec: GraphSpec) -> bool:

    return has_backward(spec)


def _gradient_reaches(spec: GraphSpec, rg: dict[str, bool], ref: str) -> set[str]:
    """The whole leaves ("x0") the gradient of `ref` flows back to, through what each output
    reads (`rg`: which values require grad)."""
    if not rg.get(ref, False):
        return set()
    if ref.startswith("x"):
        return {base_ref(ref)}
    n, k = (int(i) for i in ref[1:].split("."))
    fn = spec.functions[n]
    out = fn.outputs[k]
    return set().union(*(_gradient_reaches(spec, rg, a.ref) for s, a in enumerate(fn.args)
                         if a.ref is not None and reads(out.kind, out, s)))
