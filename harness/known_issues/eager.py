"""Eager autograd and forward AD: entries for bugs of torch's own Function machinery."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import torch

from harness.dataflow import Dataflow, has_backward, saved_mutated_outputs, version_error_expected
from harness.known_issues.entry import KnownIssue, error_at, path_family, raised
from harness.known_issues.shared import (
    _DOCUMENTED_BACKWARD_ERROR,
    _NONE_ADDED,
    _aliasing_output_as_copy,
    _backward_runs,
    _functions_replaced,
    _gradient_record_of,
    _ref_of,
    _version_error_not_raised,
    _without_errors,
)
from harness.oracles.compare import Mismatch
from harness.oracles.lifetimes import LIFE
from harness.run import RunResult
from harness.spec import FunctionSpec, GraphSpec

# --- in-place updates of views ------------------------------------------------------------


def _dirty_views(spec: GraphSpec) -> dict[int, int]:
    """Functions whose backward runs that modify in place an input that is a view: {function:
    that view's slot}. torch wraps their node in a CopySlices (custom_function.cpp,
    _process_backward_mode_ad), which takes the Function's gradient number 0 as the view's and
    copies it into the view's base (functions/tensor.cpp, CopySlices::apply)."""
    found = {}
    for n, fn in enumerate(spec.functions):
        for o in fn.outputs:
            if o.kind == "dirty" and fn.args[o.slot].view and _backward_runs(spec, n):
                found[n] = o.slot
    return found


def _wrong_shape_into_dirty_view(spec: GraphSpec) -> set[int]:
    """Those Functions with a deliberately wrong-shaped gradient (harness/generic.py `_break`: the
    first tensor argument's): CopySlices copies their gradient number 0 into the base's slice
    unchecked, whichever input is the view (eager-dirty-view-not-first-input)."""
    return {n for n in _dirty_views(spec) if spec.functions[n].error == "grad_shape"}


def _dirty_views_not_first(spec: GraphSpec) -> dict[int, int]:
    """Those Functions whose view is not their first tensor input: CopySlices sends the first
    input's gradient (number 0) into the view's base, in place of the first input's edge."""
    return {n: slot for n, slot in _dirty_views(spec).items() if slot != spec.functions[n].tensor_slots[0]}


def _misrouted_gradients(spec: GraphSpec) -> frozenset[str]:
    """Values whose gradient the misrouting changes: the first tensor input of each such
    Function (it loses that Function's gradient), its view input (whose base gets it instead,
    besides its own), and everything upstream of either."""
    flow = Dataflow(spec)
    return frozenset().union(*(flow.upstream(spec.functions[n].args[s].ref)
                               for n, view in _dirty_views_not_first(spec).items()
                               for s in (spec.functions[n].tensor_slots[0], view)))


def _backward_runs_misrouted(spec: GraphSpec, inputs_given: bool = False) -> Callable[[int], bool]:
    """Which Functions' backward torch runs with the misrouting. Given inputs (autograd.grad,
    backward(inputs=...), and always under a torch.func gradient transform: `inputs_given`),
    the engine runs only the nodes with an edge leading to an input (engine.cpp,
    GraphTask::init_to_execute); the CopySlices over each such Function has the view's base's
    edge in place of the first tensor input's, so a node that led to an input only through that
    first input is not run. Without inputs every node in the loss runs."""
    flow = Dataflow(spec)
    if not (inputs_given or spec.backward in ("grad", "double") or spec.grad_leaves):
        return flow.backward_runs
    chosen = set(spec.grad_leaves) or {i for i, leaf in enumerate(spec.leaves) if leaf.requires_grad}
    leads = flow.leads_to(chosen, cut=frozenset((n, spec.functions[n].tensor_slots[0])
                                                for n in _dirty_views_not_first(spec)))
    return lambda n: flow.backward_runs(n) and leads[n]


def _saved_mutated_outputs_never_unpacked(spec: GraphSpec) -> bool:
    """torch's version-counter error is expected (an output modified in place after the forward
    was saved by a Function whose backward runs), but with the misrouting no Function that saved
    one runs its backward, so nothing unpacks it and eager (and compiled autograd) raise nothing."""
    return version_error_expected(spec) and not saved_mutated_outputs(
        spec, backward_runs=_backward_runs_misrouted(spec))


def _leaves_the_misrouted_gradient_depends_on(spec: GraphSpec) -> frozenset[str]:
    """Leaves whose second-order gradient (create_graph double backward) can change: the
    misrouted gradient is the Function's own, a function of its inputs and of the gradient
    that reaches it, which depends on the inputs of every Function after it."""
    flow = Dataflow(spec)
    leaves: set[str] = set()
    for n in _dirty_views_not_first(spec):
        after = flow.downstream({f"f{n}.{k}" for k in spec.functions[n].tensor_outputs})
        readers = [fn for m, fn in enumerate(spec.functions)
                   if m == n or any(a.ref in after for a in fn.args if a.ref is not None)]
        leaves |= {leaf for fn in readers for a in fn.args if a.ref is not None
                   for leaf in flow.upstream_leaves(a.ref)}
    return frozenset(leaves)


def _none_into_a_base_with_grad(spec: GraphSpec) -> bool:
    """Some such Function returns None for its first tensor input (harness/generic.py `_backward`:
    no output reads it, the dirty view being the only one, so it gets None unless the Function
    returns zeros for unused inputs, or skips it by needs_input_grad), and its view's base
    requires grad, so CopySlices passes that None on to the base."""
    flow = Dataflow(spec)

    def none_for_first(fn: FunctionSpec) -> bool:
        first = fn.args[fn.tensor_slots[0]].ref
        return fn.error != "grad_shape" and (  # that error puts a tensor there
            fn.unused_grad == "none" or fn.needs_input_grad != "ignore" and not flow.requires_grad[first])
    return any(none_for_first(spec.functions[n]) and flow.requires_grad[spec.functions[n].args[view].ref]
               for n, view in _dirty_views_not_first(spec).items())


#: CopySlices::apply_impl (functions/tensor.cpp) assumes the view is its Function's input 0. When
#: the backward was given inputs (autograd.grad, backward(inputs=...)) it asserts that its edge 0
#: (the base's) and the Function's (the first input's) agree: in validity (line 136 on 2.13.0),
#: which fails when one of the two values requires grad and the other does not, and in whether
#: it executes (line 157)
_EDGE_ZERO_ASSERT = (r"(fn_edge\.is_valid\(\) == this_edge\.is_valid\(\)|it->second\.should_execute\(\) == "
                     r"task_should_compute_output\(0\)) INTERNAL ASSERT FAILED"
                     # the gradient sent down the wrong edge leaves a node waiting for one that never
                     # comes, and the engine ends the backward with nodes not ready (engine.cpp)
                     r"|^could not compute gradients for some functions$")


def _misrouted_gradient_seen(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """A wrong or missing gradient of a value the misrouting changes; CopySlices' INTERNAL
    ASSERT on its edge 0; under compiled autograd, also the TypeError of adding the None that
    the Function returned for its first input (compiled_autograd.py copy_slices_epilogue passes
    it on to the base) to the view's own gradient, which arrives at the same node; or the missing
    version-counter error where the misrouting cuts every Function that saved a modified output
    off the given inputs."""
    return (raised("backward", _EDGE_ZERO_ASSERT, RuntimeError)(spec, result, mismatches)
            or path_family(result.path) == "compiled" and _none_into_a_base_with_grad(spec)
            and raised("backward", _NONE_ADDED, TypeError)(spec, result, mismatches)
            or _saved_mutated_outputs_never_unpacked(spec) and _version_error_not_raised(result, mismatches)
            or path_family(result.path).startswith("func") and result.status != "error"
            and _deliberate_error_of_a_pruned_backward_not_raised(spec, mismatches)
            or any(m.checkpoint == "backward" and _gradient_record_of(spec, _misrouted_gradients(spec), m)
                   for m in mismatches))


def _deliberate_error_of_a_pruned_backward_not_raised(spec: GraphSpec, mismatches: list[Mismatch]) -> bool:
    """Eager's backward (every node in the loss) raised the deliberate error of Function m, whose
    node a torch.func gradient transform (given the chosen leaves as inputs) does not run: the
    misrouted edge was its only way to them."""
    runs = _backward_runs_misrouted(spec, inputs_given=True)
    for m in mismatches:
        raised_by = re.match(r"^eager raised RuntimeError at backward: [Ff]unction F(\d+)Backward ", m.detail)
        if (m.role == "error" and m.checkpoint == "backward" and raised_by is not None
                and _DOCUMENTED_BACKWARD_ERROR.search(m.detail) and not runs(int(raised_by[1]))):
            return True
    return False


def _misrouted_gradient_damage(spec: GraphSpec, m: Mismatch) -> bool:
    """The error at backward (the assert, compiled autograd's TypeError); the gradient records of
    the values the misrouting changes; and with create_graph, the second-order gradients of the
    leaves the misrouted gradient depends on, and the lifetime of the first tensor inputs."""
    if m.checkpoint == "double_backward" and m.role.startswith("dgrad:"):
        return _ref_of(m.role) in _leaves_the_misrouted_gradient_depends_on(spec)
    if m.checkpoint.removeprefix(LIFE) in ("drop_outputs", "drop_all"):
        return m.role in _first_inputs_kept_by_create_graph(spec)
    return error_at("backward")(spec, m) or _gradient_record_of(spec, _misrouted_gradients(spec), m)


def _first_inputs_kept_by_create_graph(spec: GraphSpec) -> frozenset[str]:
    """The lifetime roles of each such Function's first tensor input under a create_graph backward:
    the tensor itself and every argument that is that very tensor. Seen: a leaf saved by an earlier
    Function and passed first beside the dirty view is never freed, gc.collect() included (with the
    view passed first, it is; the reproducer's leaked_under_create_graph)."""
    if spec.backward != "double":
        return frozenset()
    firsts = {spec.functions[n].args[spec.functions[n].tensor_slots[0]].ref for n in _dirty_views_not_first(spec)}
    return frozenset(firsts) | {f"arg{n}.{k}" for n, fn in enumerate(spec.functions) for k, a in enumerate(fn.args)
                                if a.ref in firsts and not a.clone}


def _dirty_views_as_whole_clones(spec: GraphSpec) -> GraphSpec:
    """Those view arguments become the clone itself (modified in place as before, without a
    base to rebase: no CopySlices). Where the misrouting kept every saved output modified in
    place from being unpacked, those outputs are not modified either: with the Functions that
    saved them run again, the variant would stop at the version-counter error before any
    gradient is compared (harness/check.py `_against_math` compares nothing else then)."""
    if _saved_mutated_outputs_never_unpacked(spec):
        saved = saved_mutated_outputs(spec)
        spec = dataclasses.replace(spec, mutated_outputs=tuple(r for r in spec.mutated_outputs if r not in saved))
    sites = _dirty_views_not_first(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, args=tuple(
        dataclasses.replace(a, view=False) if sites.get(n) == s else a for s, a in enumerate(fn.args))))


def _assert_sites(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    return Dataflow(spec).forward_ad.asserts if spec.forward_ad else ()


def _jvp_assert_sites(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    """func.jvp gives every leaf a tangent, as eager, and runs forward AD whatever
    `spec.forward_ad` says (harness/paths/func.py); without eager's early return."""
    return Dataflow(spec).forward_ad_under_func.asserts


def _jacfwd_assert_sites(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    """func.jacfwd differentiates only the leaves whose gradients eager computes (the others
    are constants, without a tangent), and runs forward AD only where eager runs a backward
    (harness/paths/func.py: chosen_leaves, has_backward)."""

    return Dataflow(spec).forward_ad_of_grad_leaves.asserts if has_backward(spec) else ()


def _fwad_assert_raised(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The assert, at forward_ad (eager's forward AD, func.jvp) or at forward (func.jacfwd,
    whose forward AD is its forward)."""
    return any(raised(checkpoint, r"INTERNAL ASSERT FAILED at .*autograd_meta\.cpp.*Expected both tensor "
                                  r"and its forward grad to be floating point or complex")(spec, result, mismatches)
               for checkpoint in ("forward_ad", "forward"))


def _early_return_sites(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    fwd = Dataflow(spec).forward_ad
    return fwd.early_returns if spec.forward_ad and fwd.dropped else ()


def _tangent_ref(m: Mismatch) -> str | None:
    """The value whose tangent (or the tangent's strides) this mismatch is about."""
    for checkpoint, prefix in (("forward_ad", "tangent:"), ("meta:forward_ad", "stride:tangent:")):
        if m.checkpoint == checkpoint and m.role.startswith(prefix):
            return m.role[len(prefix):]
    return None


def _dropped_tangent_seen(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """A dropped output has no tangent, or a zero one: a later Function that returns it as-is
    (or dirty) gets its undefined tangent materialized as zeros and sets that on it (the
    2.15.0 func audit, spec 9341cbf9)."""
    dropped = Dataflow(spec).forward_ad.dropped

    def zero(ref: str) -> bool:
        t = result.tensors.get("forward_ad", {}).get(f"tangent:{ref}")
        return isinstance(t, torch.Tensor) and t.numel() > 0 and not bool(t.any())
    return any(_tangent_ref(m) in dropped and (m.detail == "got None, expected a tensor" or zero(_tangent_ref(m)))
               for m in mismatches)


def _downstream_of_dropped_tangents(spec: GraphSpec, m: Mismatch) -> bool:
    flow = Dataflow(spec)
    return _tangent_ref(m) in flow.downstream(set(flow.forward_ad.dropped))


ENTRIES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="copyslices-skips-gradient-validation",
        title=("A custom Function that modifies a view input in place (mark_dirty) runs under a CopySlices "
               "node, which copies its first gradient into the base's slice without validate_outputs' "
               "shape check: a wrong-shaped gradient is broadcast silently, or raises copy_'s 'The size of "
               "tensor a must match' naming no Function, instead of '... returned an invalid gradient'"),
        first=(2, 13, 0), last=None,
        # func: the gradient transforms run the same CopySlices (the final 2.14.1 campaign saw the
        # error under func.grad, func.vjp and func.jacrev, and their +dynamo variants)
        paths=("eager", "owned", "borrowed", "compiled", "dynamo", "func", "func+dynamo"),
        reproducer="copyslices_skips_gradient_validation.py",
        upstream=(),
        related=(),
        kind="missing error",
        trigger=lambda spec: bool(_wrong_shape_into_dirty_view(spec)),
        witness=raised("backward", r"^The size of tensor a \(\d+\) must match the size of tensor b \(\d+\)",
                       RuntimeError),
        damage=error_at("backward"),
        damages="the error message at backward (where copy_ broadcasts, no error and nothing differs)",
        # without the error, the rest of the backward (through the CopySlices) is checked
        workaround=lambda spec: _without_errors(lambda n, fn: n in _wrong_shape_into_dirty_view(spec))(spec),
    ),
    KnownIssue(
        id="eager-dirty-view-not-first-input",
        title=("A custom Function that modifies in place (mark_dirty) a view input that is not its first tensor "
               "input: the CopySlices node torch puts over it takes the Function's gradient number 0 (the first "
               "tensor input's) as the view's, so the view's base gets the first input's gradient besides its "
               "own and the first input gets none. Given inputs (autograd.grad, backward(inputs=...)), CopySlices "
               "hits an INTERNAL ASSERT when only one of the two requires grad; compiled autograd adds the None "
               "the Function returns for that input and raises TypeError; under create_graph the first input, "
               "saved by an earlier Function, can leak (never freed)"),
        first=(2, 13, 0), last=None,
        # dynamo: where it gets to the backward (dynamo-mark-dirty-inplace-result raises at forward
        # first on 2.13.0); func: the gradient transforms run the same CopySlices (a false-positive
        # audit saw the INTERNAL ASSERT under func.grad and func.vjp on 2.13.0 and 2.14.1)
        paths=("eager", "owned", "borrowed", "compiled", "dynamo", "func", "func+dynamo"),
        reproducer="eager_dirty_view_not_first_input.py",
        upstream=(),
        related=(
            "pytorch/pytorch#5871 (closed, 2018: an old-style Function modifying a slice of its first input in place; there the dirty input is the first and not a view)",
        ),
        kind="silent wrong result",
        trigger=lambda spec: bool(_dirty_views_not_first(spec)),
        witness=_misrouted_gradient_seen,
        damage=_misrouted_gradient_damage,
        damages=("the error at backward (the INTERNAL ASSERT, compiled autograd's TypeError, the missing "
                 "version-counter error of a saved output whose saver the misrouting cuts off); at backward, "
                 "the gradients, retained grads and hook records (and their strides) of the first tensor "
                 "input, of the view input and of everything upstream of them; with create_graph, the "
                 "second-order gradients of the leaves the misrouted gradient depends on, and the leak and "
                 "use count at drop_outputs and drop_all of the first tensor input (and the arguments that are it)"),
        workaround=_dirty_views_as_whole_clones,
    ),
    KnownIssue(
        id="fwad-input-as-is-none-tangent",
        title=("Forward AD: a custom Function with set_materialize_grads(False) that returns an "
               "input without a tangent as-is (or dirty), and whose jvp returns None for it, hits an "
               "INTERNAL ASSERT in autograd_meta.cpp instead of leaving the output without a tangent"),
        first=(2, 13, 0), last=None,
        paths=("eager", "owned", "borrowed", "compiled", "dynamo",
               "func.jvp", "func.jvp+dynamo", "func.jacfwd", "func.jacfwd+dynamo"),
        reproducer="fwad_input_as_is_none_tangent.py",
        upstream=(),
        related=(
            "pytorch/pytorch#90067 (open: the same autograd_meta.cpp assert, triggered by a non-differentiable output)",
        ),
        kind="crash",
        trigger=lambda spec: bool(_assert_sites(spec)),
        path_triggers={"func.jvp": lambda spec: bool(_jvp_assert_sites(spec)),
                       "func.jvp+dynamo": lambda spec: bool(_jvp_assert_sites(spec)),
                       "func.jacfwd": lambda spec: bool(_jacfwd_assert_sites(spec)),
                       "func.jacfwd+dynamo": lambda spec: bool(_jacfwd_assert_sites(spec))},
        witness=_fwad_assert_raised,
        damage=error_at("forward_ad", "forward"),
        damages=("the error at forward_ad (every tangent is lost with it); under func.jacfwd, whose forward "
                 "AD is its forward, the error at forward"),
        # the union of every path's sites: copies where any of them could assert
        workaround=lambda spec: _aliasing_output_as_copy(
            spec, lambda s: _assert_sites(s) or _jvp_assert_sites(s) or _jacfwd_assert_sites(s)),
    ),
    KnownIssue(
        id="fwad-view-drops-later-tangents",
        title=("Forward AD: when a custom Function returns a view of (or as-is) an input that has no "
               "tangent, every later output silently loses its tangent: _process_forward_mode_AD in "
               "custom_function.cpp ends the output loop with `return` where `continue` is meant"),
        first=(2, 13, 0), last=None,
        paths=("eager", "owned", "borrowed", "compiled", "dynamo"),
        reproducer="fwad_view_of_tangentless_input_drops_later_tangents.py",
        upstream=(),
        related=(),
        kind="silent wrong result",
        trigger=lambda spec: bool(_early_return_sites(spec)),
        witness=_dropped_tangent_seen,
        damage=_downstream_of_dropped_tangents,
        damages="forward_ad tangents of the dropped outputs and of every value computed from them",
        workaround=lambda spec: _aliasing_output_as_copy(spec, _early_return_sites),
    ),
)
