"""Dynamo and a tensor inside a list: one a custom Function returns (`return y, [z]`,
OutputSpec.listed) or is given (`F.apply(x, [y])`, Arg.listed). Eager's apply tracks neither; Dynamo
tracks both. Their entries, each beside its predicates; dynamo.py joins them into the Dynamo family's
ENTRIES, where they stand in the registry's order."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from harness.dataflow import Dataflow
from harness.known_issues.entry import Damage, KnownIssue
from harness.known_issues.shared import _functions_replaced, _ref_of
from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import GraphSpec


def _listed_downstream(spec: GraphSpec) -> frozenset[str]:
    """The outputs returned in a list (OutputSpec.listed) and every value computed from them: where
    Dynamo's tracking of the listed tensor changes what requires grad."""
    return Dataflow(spec).downstream(set(spec.listed_refs())) if spec.listed_refs() else frozenset()


_TRACKING_ROLES = ("requires_grad", "grad_fn", "is_leaf")


def _listed_output_seen_tracked(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """A listed output requires grad, has a grad_fn or is not a leaf where eager's is untracked."""
    listed = spec.listed_refs()
    return any(m.checkpoint in ("forward", "meta:forward") and m.role.partition(":")[0] in _TRACKING_ROLES
               and _ref_of(m.role) in listed for m in mismatches)


def _read_upstream(spec: GraphSpec, refs: frozenset[str]) -> frozenset[str]:
    """`refs` and every value they were computed from, through any argument (in a list or not), with
    the leaf of each view: where a gradient Dynamo sends through a tracked value can arrive."""
    found, todo = set(), list(refs)
    while todo:
        ref = todo.pop()
        if ref in found:
            continue
        found.add(ref)
        if ref.startswith("x"):
            found.add(ref.split("[")[0])
        else:
            todo += [a.ref for a in spec.functions[int(ref[1:].split(".")[0])].args if a.ref is not None]
    return frozenset(found)


def _tracked_through_lists(tracked: Callable[[GraphSpec], frozenset[str]]) -> Damage:
    """What Dynamo's tracking of a tensor in a list changes, where `tracked` are the values it makes
    require grad: whether they are tracked (their values are still compared); and at backward, the
    loss that then includes them, so the backward runs where eager's is skipped, and a gradient is
    present where eager has None (or the reverse) on a value they were computed from. A gradient's
    value, where both have one, is still compared, and so is the presence of any other."""
    def damage(spec: GraphSpec, m: Mismatch) -> bool:
        if m.checkpoint in ("forward", "meta:forward"):
            return m.role.partition(":")[0] in _TRACKING_ROLES and _ref_of(m.role) in tracked(spec)
        if m.checkpoint in ("backward", "meta:backward", "double_backward"):
            return m.role == "skipped" or (
                m.role.partition(":")[0] in ("grad", "grad2", "agrad", "retained", "dgrad")
                and m.detail in ("expected None", "got None, expected a tensor", "present on one side only")
                and _ref_of(m.role) in _read_upstream(spec, tracked(spec)))
        return False
    return damage


def _listed_argument_readers(spec: GraphSpec) -> set[int]:
    """Functions applied with grad enabled that eager gives no node (no tensor input requires grad)
    while a tensor passed to them in a list (Arg.listed) requires grad: Dynamo tracks their outputs."""
    flow = Dataflow(spec)
    return {n for n, fn in enumerate(spec.functions) if fn.grad_mode != "no_grad" and not flow.node_exists(n)
            and any(flow.requires_grad[fn.args[s].ref] for s in fn.listed_slots)}


def _listed_argument_downstream(spec: GraphSpec) -> frozenset[str]:
    readers = _listed_argument_readers(spec)
    return Dataflow(spec).downstream({f"f{n}.{k}" for n in readers for k in spec.functions[n].tensor_outputs})


def _listed_argument_seen_tracked(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """An output of such a Function requires grad, has a grad_fn or is not a leaf where eager's is untracked."""
    outputs = {f"f{n}.{k}" for n in _listed_argument_readers(spec) for k in spec.functions[n].tensor_outputs}
    return any(m.checkpoint in ("forward", "meta:forward") and m.role.partition(":")[0] in _TRACKING_ROLES
               and _ref_of(m.role) in outputs for m in mismatches)


def _without_listed_arguments(spec: GraphSpec) -> GraphSpec:
    """The tensors those Functions get in a list passed as themselves."""
    readers = _listed_argument_readers(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, args=tuple(
        dataclasses.replace(a, listed=False) for a in fn.args)) if n in readers else fn)


def _without_listed_outputs(spec: GraphSpec) -> GraphSpec:
    """Every output returned as itself rather than in a list."""
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        dataclasses.replace(o, listed=False) for o in fn.outputs)))


ENTRIES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="dynamo-listed-output-tracked",
        title=("torch.compile of a custom Function whose forward returns a tensor inside a list (`return y, [z]`): "
               "eager's Function.apply wraps only the tensors returned at the top level (python_function.cpp, "
               "_wrap_outputs), so the tensor in the list does not require grad and has no grad_fn; under "
               "torch.compile it requires grad and has a grad_fn (backends eager, aot_eager and inductor), and so "
               "does every value computed from it (dynamo-listed-argument-tracked is the argument side)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_listed_output_tracked.py",
        upstream=(),
        related=("pytorch/pytorch#144142 (closed: a list of ints beside a tensor output raised; now traced)",
                 "pytorch/pytorch#166788 (closed pull request: the requires_grad Dynamo gives a Function's "
                 "outputs, overwrite_tensor_vt_requires_grad)",
                 "pytorch/pytorch#191029 (open pull request on a Function's non-tensor outputs in the node Dynamo "
                 "reconstructs, which a list is; whether it covers a tensor inside one is not known)"),
        kind="wrong metadata",
        trigger=lambda spec: bool(spec.listed_refs()),
        witness=_listed_output_seen_tracked,
        damage=_tracked_through_lists(_listed_downstream),
        damages=("at forward, requires_grad, grad_fn and is_leaf of the listed outputs and of every value computed "
                 "from them; at backward, whether it runs ('skipped') and whether a gradient is present (not its "
                 "value)"),
        workaround=_without_listed_outputs,
    ),
    KnownIssue(
        id="dynamo-listed-argument-tracked",
        title=("torch.compile of a custom Function given a tensor inside a list (`F.apply(x, [y])`): eager's "
               "Function.apply sees the list as a non-tensor argument (python_function.cpp, unpack_input), so "
               "where no other input requires grad the outputs do not and have no grad_fn; under torch.compile "
               "they require grad and have a grad_fn whenever the listed tensor does (backends eager, aot_eager and "
               "inductor), and so does every value computed from them (dynamo-listed-output-tracked is the "
               "output side)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_listed_argument_tracked.py",
        upstream=(),
        related=("pytorch/pytorch#166788 (closed pull request: the requires_grad Dynamo gives a Function's "
                 "outputs, overwrite_tensor_vt_requires_grad)",),
        kind="wrong metadata",
        trigger=lambda spec: bool(_listed_argument_readers(spec)),
        witness=_listed_argument_seen_tracked,
        damage=_tracked_through_lists(_listed_argument_downstream),
        damages=("at forward, requires_grad, grad_fn and is_leaf of those Functions' outputs and of every value "
                 "computed from them; at backward, whether it runs ('skipped') and whether a gradient is present "
                 "(not its value)"),
        workaround=_without_listed_arguments,
    ),
)
