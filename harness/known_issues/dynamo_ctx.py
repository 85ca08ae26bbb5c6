"""Dynamo and a custom Function's ctx: what the ctx Dynamo traces with (or the real one its eager
fallback compiles a forward with) makes of needs_input_grad, saved_variables, mark_non_differentiable
and mark_dirty. Its entries, each beside its predicates; dynamo.py joins them into the Dynamo
family's ENTRIES, where they stand in the registry's order."""

from __future__ import annotations

import dataclasses
import re

from harness.dataflow import VERSION_ERROR, Dataflow, saved_mutated_outputs
from harness.known_issues.entry import KnownIssue, error_at, raised
from harness.known_issues.shared import (
    _DOCUMENTED_BACKWARD_ERROR,
    _aliases_of,
    _backward_runs,
    _breaks_the_graph_itself,
    _functions_replaced,
    _gradient_record_of,
    _ref_of,
)
from harness.oracles.compare import Mismatch
from harness.run import RunResult
from harness.spec import Arg, FunctionSpec, GraphSpec, OutputSpec

def _alias_of(m: Mismatch) -> str | None:
    return m.role[len("alias:"):] if m.checkpoint == "meta:forward" and m.role.startswith("alias:") else None


def _no_argument_functions_reading_needs_input_grad(spec: GraphSpec) -> set[int]:
    return {n for n, fn in enumerate(spec.functions) if not fn.args and fn.needs_input_grad == "saved"}


def _needs_input_grad_read_in_backward_only(spec: GraphSpec) -> GraphSpec:
    bad = _no_argument_functions_reading_needs_input_grad(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, needs_input_grad="read")
                               if n in bad else fn)


def _marks_on_the_real_ctx_lost(spec: GraphSpec) -> set[str]:
    """Non-differentiable outputs of plain Functions whose apply Dynamo runs eagerly, compiling
    their forward frame on its own with the real ctx as an input (an old-style forward, or a
    setup_context that runs a tensor op). It runs an apply eagerly when the Function breaks the
    graph itself, and, in the eager fallback of the harness's forward, which applies the
    Functions in a loop (a graph break in a loop makes Dynamo skip the loop's frame, and each
    apply is compiled in a frame of its own), every apply after a Function with no tensor
    input (seen on 2.13.0, 2.14.1 and 2.15.0, the reproducer's second form; where Dynamo
    decides this is not pinned down). The witness needs the eager fallback."""
    flow = Dataflow(spec)
    no_tensor_input = [n for n, fn in enumerate(spec.functions) if not fn.tensor_slots]
    return {f"f{n}.{k}" for n, fn in enumerate(spec.functions)
            if fn.code == "plain" and flow.node_exists(n)
            and (_breaks_the_graph_itself(fn) or any(m < n for m in no_tensor_input))
            and (fn.style == "old" or "intermediates" in fn.save and fn.nonlinear_slots)
            for k, o in enumerate(fn.outputs) if o.non_differentiable}


def _dirty_views_of_no_grad_clones(spec: GraphSpec) -> dict[int, int]:
    """Functions with an input that requires grad that modify in place a view of a clone of a
    value that does not (`Arg(clone=True, view=True)`): {function: that view's slot}. Dynamo
    either traces such a Function (and raises dynamo-mark-dirty-inplace-result's graph break)
    or runs it in eager after a graph break, the view coming out of the region before it, which
    AOT Autograd ran under no_grad (nothing in it requires grad)."""
    flow = Dataflow(spec)
    return {n: o.slot for n, fn in enumerate(spec.functions) if flow.node_exists(n)
            for o in fn.outputs if o.kind == "dirty" and fn.args[o.slot].view
            and not flow.requires_grad[fn.args[o.slot].ref]}


def _no_grad_clone_views_as_whole_clones(spec: GraphSpec) -> GraphSpec:
    """Those view arguments become the clone itself (no view to rebase)."""
    sites = _dirty_views_of_no_grad_clones(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, args=tuple(
        dataclasses.replace(a, view=False) if sites.get(n) == s else a for s, a in enumerate(fn.args))))


def _requires_grad_came_back(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Through the eager fallback, an output that lost its mark requires grad: `requires_grad`
    at forward, or (where an error at backward leaves only the metadata compared) its grad_fn
    and is_leaf."""
    return "eager fallback" in result.note and _marks_seen_lost(_marks_on_the_real_ctx_lost(spec), mismatches)


def _marks_seen_lost(lost: set[str] | frozenset[str], mismatches: list[Mismatch]) -> bool:
    came_back = {("forward", "requires_grad"): "expected False, got True",
                 ("meta:forward", "grad_fn"): "expected False, got True",
                 ("meta:forward", "is_leaf"): "expected True, got False"}
    return any(came_back.get((m.checkpoint, m.role.split(":")[0])) == m.detail and _ref_of(m.role) in lost
               for m in mismatches)


def _marked_outputs_and_what_follows(spec: GraphSpec, m: Mismatch) -> bool:
    return _lost_marks_damage(spec, _marks_on_the_real_ctx_lost(spec), m)


def _lost_marks_damage(spec: GraphSpec, lost: set[str] | frozenset[str], m: Mismatch) -> bool:
    """What outputs that lost their non-differentiable mark cause. At forward, requires_grad,
    grad_fn and is_leaf of them and of what is computed from them. At backward they join the
    loss, so a backward runs where eager's had none: what it records (gradients, and their
    strides under meta:) is on this side only; when that backward is one that eager skips, the
    path raises autograd's error for its deliberate invalid results, or torch's version-counter
    error for a value it saved that was modified after the forward, where eager raised nothing
    (or later)."""
    flow = Dataflow(spec)
    tainted = flow.downstream(set(lost))
    if m.checkpoint in ("forward", "meta:forward"):
        return m.role.startswith(("requires_grad:", "grad_fn:", "is_leaf:")) and _ref_of(m.role) in tainted
    # the backward that now runs sends its inputs a gradient for the output that lost its mark,
    # which the generated backward ignores: a tensor (zeros where nothing else arrives) where
    # eager's gradient is None (the 2.14.1 dynamo audit, spec a8ed736c)
    now_upstream = frozenset().union(*(flow.upstream(a.ref) for n in _now_running(spec, tainted)
                                       for a in spec.functions[n].args if a.ref is not None))
    return m.checkpoint in ("backward", "meta:backward") and (
        m.role == "skipped" or m.detail == "present on one side only" or m.role.startswith("hook")
        or m.detail == "expected None" and _ref_of(m.role) in now_upstream
        or m.role.startswith("stride:") and m.detail.startswith("expected '<absent>', got ")
        or m.role == "error" and (_skipped_invalid_backward_raised(spec, lost, m)
                                  or _skipped_backward_version_error(spec, tainted, m)))


def _skipped_backward_version_error(spec: GraphSpec, tainted: frozenset[str], m: Mismatch) -> bool:
    """The path raised torch's version-counter error at backward where eager did not: a Function
    whose backward eager skips, and which now runs (it made or reads a value that lost its mark),
    saved an output modified in place after the forward."""
    if VERSION_ERROR.search(m.detail) is None or "; eager raised" in m.detail:
        return False
    now_runs = _now_running(spec, tainted)
    return bool(saved_mutated_outputs(spec, backward_runs=lambda n: n in now_runs))


def _skipped_invalid_backward_raised(spec: GraphSpec, lost: set[str] | frozenset[str], m: Mismatch) -> bool:
    """The path raised autograd's error for the deliberate invalid results of Function n's
    backward, which eager never calls, and which now runs: it made a value that lost its mark
    (its outputs that reach the loss were all marked non-differentiable), or reads one or what is
    computed from one (it has a node only through it: the dynamo audit, spec 49deffdf)."""
    detail = m.detail.removeprefix(f"{m.path} ")  # "<path> raised ...; eager ran without error"
    raised = _PATH_RAISED_DOCUMENTED_BACKWARD_ERROR.match(detail)
    if raised is None:
        return False
    n = int(raised.group(1))
    return n < len(spec.functions) and spec.functions[n].error is not None and not _backward_runs(spec, n) and (
        n in _now_running(spec, Dataflow(spec).downstream(set(lost))))


def _now_running(spec: GraphSpec, tainted: frozenset[str]) -> set[int]:
    """Functions whose backward eager skips that made or read a value in `tainted` (outputs that
    lost their mark and what is computed from them): they have a node now."""
    return {n for n, fn in enumerate(spec.functions) if not _backward_runs(spec, n) and (
        any(f"f{n}.{k}" in tainted for k in fn.tensor_outputs) or any(a.ref in tainted for a in fn.args))}


def _differentiable_after_all(spec: GraphSpec) -> GraphSpec:
    lost = _marks_on_the_real_ctx_lost(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        dataclasses.replace(o, non_differentiable=False) if f"f{n}.{k}" in lost else o
        for k, o in enumerate(fn.outputs))))


def _marks_shifted_by_constants(spec: GraphSpec) -> tuple[frozenset[str], frozenset[str]]:
    """(outputs marked non-differentiable that lose the mark, outputs that get it instead) under
    torch.compile: in Functions Dynamo traces (not those that break the graph themselves) with an
    input that requires grad, each mark is replayed at its index among all outputs on the traced
    graph's outputs, the tensors only, so a non-tensor output before a marked one shifts it."""
    flow = Dataflow(spec)
    lost: set[str] = set()
    moved: set[str] = set()
    for n, fn in enumerate(spec.functions):
        marked = {k for k, o in enumerate(fn.outputs) if o.non_differentiable}
        if not marked or _breaks_the_graph_itself(fn) or not flow.node_exists(n):
            continue
        tensors = fn.tensor_outputs
        replayed = {tensors[k] for k in marked if k < len(tensors)}
        lost |= {f"f{n}.{k}" for k in marked - replayed}
        moved |= {f"f{n}.{k}" for k in replayed - marked}
    return frozenset(lost), frozenset(moved)


def _shifted_marks_seen(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """An output whose mark the shift drops requires grad, or one it moves to does not."""
    lost, moved = _marks_shifted_by_constants(spec)
    return _marks_seen_lost(lost, mismatches) or any(
        m.checkpoint in ("forward", "meta:forward") and m.role.startswith(("requires_grad:", "grad_fn:", "is_leaf:"))
        and _ref_of(m.role) in moved for m in mismatches)


def _shifted_marks_and_what_follows(spec: GraphSpec, m: Mismatch) -> bool:
    """What the outputs that lose their mark cause (`_lost_marks_damage`), and what the outputs
    that get it instead do: whether they and what is computed from them require grad, and the
    gradients of the values they were computed from, which no longer get their gradient. And the
    aliases of both and of the outputs aliasing them: AOT Autograd regenerates an output's alias
    of a graph intermediate only when both require grad (collect_metadata_analysis.py), so with
    requires_grad moved, a view (or an as-is output) of such an output comes back a view of
    another tensor on its storage, or the same tensor."""
    lost, moved = _marks_shifted_by_constants(spec)
    if _lost_marks_damage(spec, lost, m):
        return True
    if _alias_of(m) in _aliases_of(spec, lost | moved):
        return True
    flow = Dataflow(spec)
    if m.checkpoint in ("forward", "meta:forward"):
        return m.role.startswith(("requires_grad:", "grad_fn:", "is_leaf:")) and _ref_of(m.role) in flow.downstream(
            set(moved))
    upstream = frozenset().union(*(flow.upstream(r) for r in moved))
    return m.checkpoint.removeprefix("meta:") in ("backward", "double_backward") and (
        m.role.startswith(("grad:", "agrad:", "dgrad:", "stride:grad:", "stride:agrad:")) and _ref_of(m.role) in upstream
        or m.detail == "present on one side only")


def _constants_before_marks_as_tensors(spec: GraphSpec) -> GraphSpec:
    """In the Functions whose marks shift, the non-tensor outputs become computed constants."""
    lost, moved = _marks_shifted_by_constants(spec)
    return _constants_as_tensors(spec, {int(r[1:].split(".")[0]) for r in lost | moved})


def _dirty_marks_shifted_by_constants(spec: GraphSpec) -> set[int]:
    """Functions whose ctx.mark_dirty Dynamo replays at a shifted index (the mark_non_differentiable
    shift's twin, `_marks_shifted_by_constants`): traced (an input requires grad, nothing breaks the
    graph, the dirty input returned as itself: the other form is dynamo-mark-dirty-inplace-result's
    graph break) with a non-tensor output before a dirty one."""
    flow = Dataflow(spec)
    shifted = set()
    for n, fn in enumerate(spec.functions):
        dirty = [k for k, o in enumerate(fn.outputs) if o.kind == "dirty"]
        if (dirty and fn.dirty_return == "input" and not _breaks_the_graph_itself(fn) and flow.node_exists(n)
                and any(o.kind == "const" for o in fn.outputs[:max(dirty)])):
            shifted.add(n)
    return shifted


def _shifted_dirty_outputs(spec: GraphSpec) -> frozenset[str]:
    """The dirty outputs of those Functions with a non-tensor output before them: the ones whose
    mark moves (to another output, or past the tensors)."""
    return frozenset(f"f{n}.{k}" for n in _dirty_marks_shifted_by_constants(spec)
                     for k, o in enumerate(spec.functions[n].outputs)
                     if o.kind == "dirty" and any(c.kind == "const" for c in spec.functions[n].outputs[:k]))


_DIRTY_MARK_MOVED = raised("forward", r"a leaf Variable that requires grad has been used in an in-place operation"
                                      r"|mark_dirty\(\) received a tensor that was not an input")


def _dirty_mark_moved(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """torch's error where the mark lands on a view of another input; silently (a fresh tensor
    gets it, with a UserWarning, or no tensor does), a dirty output whose mark moved comes back
    a view: it is an input returned as-is now, and AOT Autograd regenerates it as a view of the
    clone it was made from."""
    shifted = _shifted_dirty_outputs(spec)
    without_grad = _shifted_dirty_outputs_of_inputs_without_grad(spec)
    return _DIRTY_MARK_MOVED(spec, result, mismatches) or any(
        m.checkpoint == "meta:forward" and m.role.startswith("alias:") and _ref_of(m.role) in shifted
        and ", got 'view of" in m.detail
        or m.checkpoint == "forward" and m.role.startswith("requires_grad:") and _ref_of(m.role) in without_grad
        and m.detail == "expected True, got False" for m in mismatches)


def _shifted_dirty_outputs_of_inputs_without_grad(spec: GraphSpec) -> frozenset[str]:
    """Those outputs whose input does not require grad: returned unmarked, as that input itself
    (where it comes into the frame Dynamo compiles from outside: the loop form after a graph
    break), they do not require grad either (2.13.0, backend eager: a 25-minute campaign's fc7c468a)."""
    requires_grad = Dataflow(spec).requires_grad
    return frozenset(r for r in _shifted_dirty_outputs(spec) if not requires_grad[_dirty_outputs(spec)[r][0].ref])


def _moved_dirty_mark_damage(spec: GraphSpec, m: Mismatch) -> bool:
    """The error at forward; silently, the aliases of those outputs and of what is computed from
    them, and at backward the gradients of every value upstream of them: the Function's backward is
    skipped for an output regenerated as a view (dynamo-aot-intermediate-alias-skips-backward's
    mechanism, reached through the lost mark)."""
    if error_at("forward")(spec, m):
        return True
    flow = Dataflow(spec)
    shifted = _shifted_dirty_outputs(spec)
    if m.checkpoint == "meta:forward" and m.role.startswith("alias:"):
        return _ref_of(m.role) in flow.downstream(set(shifted))
    if m.checkpoint in ("forward", "meta:forward"):
        return m.role.startswith(("requires_grad:", "grad_fn:", "is_leaf:")) and _ref_of(m.role) in flow.downstream(
            set(_shifted_dirty_outputs_of_inputs_without_grad(spec)))
    upstream = frozenset().union(*(flow.upstream(r) for r in shifted))
    return m.checkpoint.removeprefix("meta:") in ("backward", "double_backward") and m.role.removeprefix(
        "stride:").startswith(("grad:", "grad2:", "agrad:", "dgrad:", "retained:")) and _ref_of(
        m.role.removeprefix("stride:")) in upstream or _gradient_record_of(spec, upstream, m)  # and hooks' records


def _constants_as_tensors(spec: GraphSpec, functions: set[int]) -> GraphSpec:
    """In these Functions the non-tensor outputs become computed constants (bias-only tensors):
    no output index shifts, every mark and every other value stays."""
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        OutputSpec("compute", bias=0.5) if o.kind == "const" else o for o in fn.outputs)) if n in functions else fn)


#: the same error, raised by the path itself (a Mismatch's detail), with the Function's number
_PATH_RAISED_DOCUMENTED_BACKWARD_ERROR = re.compile(
    r"^raised RuntimeError at backward: " + _DOCUMENTED_BACKWARD_ERROR.pattern.replace(r"\w+Backward", r"F(\d+)Backward"))


def _saves_tensors(fn: FunctionSpec) -> bool:
    """The backward unpacks at least one saved tensor (harness/generic.py, _unpack_saved): a mask, an input
    of a nonlinear term, a derivative, or an output."""
    return bool(fn.mask_slots or ("inputs" in fn.save and fn.nonlinear_slots)
                or ("intermediates" in fn.save and any(t.op != "linear" for o in fn.outputs for t in o.terms))
                or ("outputs" in fn.save and fn.tensor_outputs))


def _reads_saved_variables(spec: GraphSpec) -> bool:
    """A Function with a backward node reads what it saved through ctx.saved_variables (Dynamo traces
    the backward with the forward, whether a backward runs or not)."""
    flow = Dataflow(spec)
    return any(fn.api == "function" and fn.saved_read == "saved_variables" and _saves_tensors(fn)
               and flow.node_exists(n) for n, fn in enumerate(spec.functions))


def _saved_tensors_read(spec: GraphSpec) -> GraphSpec:
    """Every backward reads ctx.saved_tensors."""
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, saved_read="saved_tensors"))


def _dirty_outputs(spec: GraphSpec) -> dict[str, tuple[Arg, float]]:
    """{dirty output: (the argument it modifies in place, the op's coefficient)}, autograd node
    or not (a Function that no input requiring grad reaches still runs its forward)."""
    return {f"f{n}.{k}": (fn.args[o.slot], o.coeff) for n, fn in enumerate(spec.functions)
            for k, o in enumerate(fn.outputs) if o.kind == "dirty"}


ENTRIES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="dynamo-no-inputs-needs-input-grad-none",
        title=("torch.compile: in the forward of a custom Function applied with no arguments, "
               "ctx.needs_input_grad is None (eager: ()), since AutogradFunctionContextVariable.create "
               "sets it only `if args`; tuple(ctx.needs_input_grad) raises TypeError"),
        # 2.14.1 raises AttributeError instead (the next entry); 2.14.0 was not tried
        first=(2, 13, 0), last=(2, 13, 0),
        paths=("dynamo",),
        reproducer="dynamo_function_no_inputs_needs_input_grad.py",
        upstream=(),
        related=("pytorch/pytorch#123700 (the closed 2024 pull request that added ctx.needs_input_grad to Dynamo)",),
        kind="wrong metadata",
        trigger=lambda spec: bool(_no_argument_functions_reading_needs_input_grad(spec)),
        witness=raised("forward", r"'NoneType' object is not iterable", TypeError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_needs_input_grad_read_in_backward_only,
    ),
    KnownIssue(
        id="dynamo-no-inputs-needs-input-grad-missing",
        title=("The torch 2.14 form of dynamo-no-inputs-needs-input-grad-none: AutogradFunctionContextVariable"
               ".create stores needs_input_grad on the traced ctx only `if args`, so in the forward of a Function "
               "applied with no arguments reading it raises \"AttributeError: 'FunctionCtx' object has no "
               "attribute 'needs_input_grad'\""),
        first=(2, 14, 1), last=None,
        paths=("dynamo",),
        reproducer="dynamo_function_no_inputs_needs_input_grad_missing.py",
        upstream=(),
        related=("pytorch/pytorch#123700 (the closed 2024 pull request that added ctx.needs_input_grad to Dynamo)",),
        kind="limitation",
        trigger=lambda spec: bool(_no_argument_functions_reading_needs_input_grad(spec)),
        witness=raised("forward", r"'FunctionCtx' object has no attribute 'needs_input_grad'", AttributeError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_needs_input_grad_read_in_backward_only,
    ),
    KnownIssue(
        id="dynamo-function-saved-variables-empty",
        title=("torch.compile of a custom Function whose backward reads ctx.saved_variables (the deprecated alias "
               "of saved_tensors, still served by eager): Dynamo's traced ctx gives the empty tuple, so a backward "
               "that loops over it returns a wrong gradient silently, and one that unpacks it raises ('not enough "
               "values to unpack', an Observed exception graph break under fullgraph=True)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_function_saved_variables_empty.py",
        upstream=(),
        related=("pytorch/pytorch#118396 (open: Dynamo does not model every ctx member; it names mark_dirty, "
                 "mark_non_differentiable and set_materialize_grads)",),
        kind="silent wrong result",
        trigger=_reads_saved_variables,
        # the generated backwards unpack a fixed number of saved tensors: plain code raises ValueError,
        # generic code pops from an empty list (IndexError); Dynamo traces the backward at forward
        witness=raised("forward", r"not enough values to unpack \(expected \d+, got 0\)|pop from empty list"),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_saved_tensors_read,
    ),
    KnownIssue(
        id="dynamo-fallback-drops-mark-non-differentiable",
        title=("torch.compile's eager fallback for a custom Function it cannot trace: Dynamo then compiles "
               "the forward frame with the real ctx, records ctx.mark_non_differentiable only on its "
               "stand-in, and the output comes back requiring grad (with a grad_fn)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_fallback_drops_mark_non_differentiable.py",
        upstream=(),
        related=(
            "pytorch/pytorch#118396 (open: ctx methods ignored where Dynamo traces the Function; here its eager fallback)",
        ),
        kind="wrong metadata",
        trigger=lambda spec: bool(_marks_on_the_real_ctx_lost(spec)),
        witness=_requires_grad_came_back,
        damage=_marked_outputs_and_what_follows,
        damages=("requires_grad, grad_fn and is_leaf of the marked outputs and of what is computed from "
                 "them; at backward, a backward that eager skipped (nothing else required grad): what it records, "
                 "gradient strides included, and autograd's error for its invalid results if it returns them"),
        workaround=_differentiable_after_all,
    ),
    KnownIssue(
        id="dynamo-mark-non-differentiable-index-shifted",
        title=("torch.compile of a custom Function that returns a non-tensor value before tensors it marks with "
               "ctx.mark_non_differentiable marks the wrong outputs, silently, with fullgraph=True: Dynamo records "
               "each mark's index among all outputs (AutogradFunctionApplyVariable, torch/_dynamo/variables/"
               "higher_order_ops.py: non_differentiable_idx over fwd_out.items) and ApplyTemplate.setup_context "
               "(torch/_functorch/autograd_function.py) replays it on the traced graph's outputs, the tensors only; "
               "a marked output requires grad, a later one loses its gradient"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_mark_non_differentiable_index_shifted.py",
        upstream=(
            "pytorch/pytorch#191029 (open pull request with the fix; no issue filed)",
            "pytorch/pytorch#191030 (its ghstack duplicate)",
        ),
        related=(),
        kind="silent wrong result",
        trigger=lambda spec: any(_marks_shifted_by_constants(spec)),
        witness=_shifted_marks_seen,
        damage=_shifted_marks_and_what_follows,
        damages=("requires_grad, grad_fn and is_leaf of the outputs the marks move to or from and of what is "
                 "computed from them, and the aliases (meta:forward) of those outputs and of the outputs aliasing "
                 "them; at backward, the gradients of what an output that lost its gradient was "
                 "computed from, and what a backward eager skipped records or raises"),
        workaround=_constants_before_marks_as_tensors,
    ),
    KnownIssue(
        id="dynamo-mark-dirty-index-shifted",
        title=("torch.compile of a custom Function that returns a non-tensor value before an input it marks "
               "with ctx.mark_dirty marks another output dirty, and fails with fullgraph=True "
               "(InternalTorchDynamoError: \"a leaf Variable that requires grad has been used in an in-place "
               "operation\", or \"ctx.mark_dirty() received a tensor that was not an input\"): the twin of "
               "dynamo-mark-non-differentiable-index-shifted, the dirty index counted among all outputs and "
               "replayed on the traced graph's tensor outputs (ApplyTemplate.setup_context, "
               "torch/_functorch/autograd_function.py); eager runs it. Where the mark lands on a fresh tensor "
               "(a UserWarning only) or past the tensors it is silent: the dirty input, no longer marked, comes "
               "back a view and (AOT, another output sharing its storage) the Function's backward is skipped for it"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_mark_dirty_index_shifted.py",
        upstream=(
            "pytorch/pytorch#191029 (open pull request with the fix; no issue filed)",
            "pytorch/pytorch#191030 (its ghstack duplicate)",
        ),
        related=(),
        kind="crash",
        trigger=lambda spec: bool(_dirty_marks_shifted_by_constants(spec)),
        witness=_dirty_mark_moved,
        damage=_moved_dirty_mark_damage,
        damages=("the error at forward; silently, the aliases (meta:forward) of the dirty outputs whose mark moved "
                 "and of what is computed from them, requires_grad, grad_fn and is_leaf of those whose input does "
                 "not require grad and of what is computed from them, and at backward the gradients (retained grads, hook records) "
                 "of every value upstream of them"),
        workaround=lambda spec: _constants_as_tensors(spec, _dirty_marks_shifted_by_constants(spec)),
    ),
    KnownIssue(
        id="dynamo-fallback-dirty-view-made-in-no-grad",
        title=("torch.compile (backend aot_eager): a view of a fresh tensor that does not require grad, made in a "
               "compiled region and passed across a graph break to a custom Function that modifies it in place "
               "(mark_dirty) while another input requires grad, raises RuntimeError 'A view was created in "
               "no_grad mode and is being modified inplace with grad mode enabled': AOT Autograd ran that region "
               "under no_grad (nothing in it requires grad)"),
        first=(2, 13, 0), last=None,
        # the eager and inductor backends run it (inductor tried on 2.13.0)
        paths=("dynamo:aot_eager",),
        reproducer="dynamo_fallback_dirty_view_made_in_no_grad.py",
        upstream=(),
        related=(
            "pytorch/pytorch#103153 (closed: the same error for a view of a view out of AOT Autograd)",
            "pytorch/pytorch#90507 (open)",
        ),
        kind="crash",
        trigger=lambda spec: bool(_dirty_views_of_no_grad_clones(spec)),
        witness=raised("forward", r"A view was created in no_grad mode and is being modified inplace with grad "
                                  r"mode enabled", RuntimeError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_no_grad_clone_views_as_whole_clones,
    ),
)
