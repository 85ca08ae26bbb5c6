"""Predicates and workarounds that entries of several families use."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from harness.dataflow import Dataflow
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
    `backward` ("Unsupported custom vjp"), one tensor passed twice, or a print or a branch on a
    tensor's value in its forward (a Python side effect it traces; stop 20's dynamo audits)."""
    refs = [a.ref for a in fn.args if a.ref is not None and not a.clone]
    return (fn.jvp or fn.backward_method == "vjp" or len(refs) != len(set(refs))
            or fn.untraceable in ("print", "data_branch"))


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
