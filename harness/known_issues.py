"""Real torch bugs the harness has found, each as data plus three small predicates.

An entry says
  * trigger(spec): the exact graph structure the bug needs (harness/dataflow.py derives it
    from the spec); it is necessary: without it the bug cannot happen;
  * witness(spec, result, mismatches): the bug's own evidence in one path's result;
  * damage(spec, mismatch): which mismatches the bug can cause (checkpoints and roles);
  * workaround(spec): the smallest change to the spec that avoids the bug.

`harness.check` calls a path "known" only when an entry's trigger holds, its witness is
seen, and every mismatch on that path is damage it explains; any other mismatch fails the
path, with the known issue named beside it. It then runs the workaround variant on that
path, so the rest of the example is still checked there. Each entry names a standalone
reproducer in `known_issues/`; `tests/test_known_issues.py` runs every one on the installed
torch and checks that it reproduces on the versions the entry names, so a fix is noticed.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from harness.dataflow import Dataflow, base_ref, differentiable, reads
from harness.oracles.compare import Mismatch
from harness.oracles.math import VERSION_ERROR, saved_mutated_outputs, version_error_expected
from harness.run import RunResult
from harness.spec import COMPLEX_DTYPES, FunctionSpec, GraphSpec, OutputSpec, SpecError, Term

REPRODUCERS = Path(__file__).resolve().parent.parent / "known_issues"


def torch_release() -> tuple[int, int, int]:
    """(major, minor, patch) of the installed torch, ignoring local tags like +cpu."""
    parts = re.match(r"(\d+)\.(\d+)\.(\d+)", torch.__version__)
    assert parts, torch.__version__
    return int(parts[1]), int(parts[2]), int(parts[3])


Trigger = Callable[[GraphSpec], bool]
Witness = Callable[[GraphSpec, RunResult, list[Mismatch]], bool]
Damage = Callable[[GraphSpec, Mismatch], bool]
Workaround = Callable[[GraphSpec], GraphSpec]


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    #: torch releases it affects: [first, last] inclusive; last None means "still open"
    first: tuple[int, int, int]
    last: tuple[int, int, int] | None
    #: path names, or families: "compiled" covers every "compiled:<mode>"
    paths: tuple[str, ...]
    reproducer: str  # file name in known_issues/
    trigger: Trigger
    witness: Witness
    damage: Damage
    #: the checkpoints and roles `damage` accepts, in words (for reports and docs)
    damages: str
    workaround: Workaround
    #: paths (or families) on which the bug needs another structure than `trigger`'s, with
    #: that trigger (func.jacfwd gives tangents to fewer leaves than eager's forward AD)
    path_triggers: dict[str, Trigger] = dataclasses.field(default_factory=dict)
    #: the bug kills the process (a segfault) at this checkpoint: where its trigger holds, the
    #: path does not run the example at all (`avoided_crash`); its reproducer, run in a
    #: subprocess by the tests, is the witness that the crash is still there
    crashes_at: str | None = None
    #: the trigger holds for every custom Function whose backward runs on the entry's paths (the
    #: backend or Dynamo's own state is the cause, no graph structure is needed), and the witness
    #: and damage read only the result: so `check_function` applies the entry to a user's own
    #: Function, whose structure no spec describes (`function_hits`)
    any_function: bool = False

    def affects_installed_torch(self) -> bool:
        v = torch_release()
        return self.first <= v and (self.last is None or v <= self.last)

    def affects_path(self, path: str) -> bool:
        return bool({path.partition("@")[0], path_family(path)} & set(self.paths))

    def triggered(self, spec: GraphSpec, path: str) -> bool:
        """The bug's structure is in `spec`, as `path` runs it."""
        trigger = self.path_triggers.get(path.partition("@")[0]) or self.path_triggers.get(path_family(path))
        return (trigger or self.trigger)(spec)

    def hit(self, spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
        """The bug happened on this path: its structure is there and its witness is seen."""
        return (self.affects_path(result.path) and self.affects_installed_torch()
                and self.triggered(spec, result.path) and self.witness(spec, result, mismatches))


class AvoidedCrash(RuntimeError):
    """The error a path reports instead of running an example that would crash the process."""

    def __init__(self, issue: KnownIssue) -> None:
        super().__init__(f"not run: it would crash the process (known torch issue {issue.id}, "
                         f"known_issues/{issue.reproducer})")
        self.issue = issue.id


def avoided_crash(spec: GraphSpec, path: str) -> RunResult | None:
    """The result of a path that must not run `spec` because a known crash would kill the
    process: an AvoidedCrash at the crash's checkpoint (what ran before it is not compared),
    which the entry's witness (`crash_avoided`) recognises. None: run it."""
    for k in KNOWN_ISSUES:
        if (k.crashes_at and k.affects_path(path) and k.affects_installed_torch()
                and k.triggered(spec, path)):
            return RunResult(path, status="error", error=AvoidedCrash(k), error_checkpoint=k.crashes_at)
    return None


def crash_avoided(issue_id: str) -> Witness:
    """The witness of a crash entry: the path reported that it avoided this entry's crash
    (harness.paths.run_path)."""
    return lambda spec, result, mismatches: (result.status == "error" and isinstance(result.error, AvoidedCrash)
                                             and result.error.issue == issue_id)


def path_family(path: str) -> str:
    """The family an entry's `paths` may name for `path`: "compiled" for "compiled:<mode>",
    "func+dynamo" for every "func.<transform>+dynamo", "func" for every "func.<transform>"
    ("<path>@<device>" is that path on another device)."""
    path = path.partition("@")[0]
    if path.startswith("func."):
        return "func+dynamo" if path.endswith("+dynamo") else "func"
    return path.partition(":")[0]


# --- witnesses and damage, by shape -------------------------------------------------------


def raised(checkpoint: str | tuple[str, ...], message: str, error_type: type[BaseException] | None = None
           ) -> Witness:
    """The path itself raised at `checkpoint` (or at one of several), with this message (and type)."""
    pattern = re.compile(message, re.S)
    checkpoints = (checkpoint,) if isinstance(checkpoint, str) else checkpoint

    def witness(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
        return (result.status == "error" and result.error_checkpoint in checkpoints
                and (error_type is None or isinstance(result.error, error_type))
                and pattern.search(str(result.error)) is not None)
    return witness


def error_at(*checkpoints: str) -> Damage:
    """Only the error report itself (what completed before it is still compared)."""
    return lambda spec, m: m.role == "error" and m.checkpoint in checkpoints


def _functions_replaced(spec: GraphSpec, change: Callable[[int, FunctionSpec], FunctionSpec]) -> GraphSpec:
    return dataclasses.replace(spec, functions=tuple(change(n, fn) for n, fn in enumerate(spec.functions)))


def _without_errors(which: Callable[[int, FunctionSpec], bool]) -> Workaround:
    return lambda spec: _functions_replaced(
        spec, lambda n, fn: dataclasses.replace(fn, error=None) if which(n, fn) else fn)


def _generic(fn: FunctionSpec) -> bool:
    return fn.code == "generic"


def _all_plain(spec: GraphSpec) -> GraphSpec:
    """Every Function written in the plain style (explicit parameters, literal constants),
    where it can be (a tuple-valued constant output has no plain literal)."""
    def plain(n: int, fn: FunctionSpec) -> FunctionSpec:
        try:
            candidate = dataclasses.replace(fn, code="plain")
            GraphSpec(shape=spec.shape, dtype=spec.dtype, leaves=spec.leaves,
                      functions=spec.functions[:n] + (candidate,))
        except SpecError:
            return fn
        return candidate
    return _functions_replaced(spec, plain)


def _backward_runs(spec: GraphSpec, n: int) -> bool:
    """Function n's backward is called (a backward runs, and it reaches Function n)."""
    return spec.backward != "none" and Dataflow(spec).backward_runs(n)


def _vjp_backward_runs(spec: GraphSpec) -> bool:
    """A Function that defines `vjp` instead of `backward` has its backward called."""
    return any(fn.backward_method == "vjp" and _backward_runs(spec, n) for n, fn in enumerate(spec.functions))


def _vjp_as_backward(spec: GraphSpec) -> GraphSpec:
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, backward_method="backward"))


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
    """Those Functions with a deliberately wrong-shaped gradient (harness/build.py `_break`: the
    first tensor argument's): CopySlices copies their gradient number 0 into the base's slice
    unchecked, whichever input is the view (eager-dirty-view-not-first-input)."""
    return {n for n in _dirty_views(spec) if spec.functions[n].error == "grad_shape"}


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


#: compiled autograd sums a None gradient with another one in the captured graph
_NONE_ADDED = r"argument '(input|other)' \(position [12]\) must be Tensor, not NoneType"


def _none_into_a_base_with_grad(spec: GraphSpec) -> bool:
    """Some such Function returns None for its first tensor input (harness/build.py `_backward`:
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
    leaves the misrouted gradient depends on."""
    if m.checkpoint == "double_backward" and m.role.startswith("dgrad:"):
        return _ref_of(m.role) in _leaves_the_misrouted_gradient_depends_on(spec)
    return error_at("backward")(spec, m) or _gradient_record_of(spec, _misrouted_gradients(spec), m)


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
    from harness.paths.func import has_backward  # the path module imports this one's users

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
    (or dirty) gets its undefined tangent materialized as zeros and sets that on it (stop 20's
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


# --- torch.func ------------------------------------------------------------------------------


def _eager_backward_runs(spec: GraphSpec) -> bool:
    from harness.paths.func import has_backward  # the path module imports this one's users

    return has_backward(spec)


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


def _tensor_hooked_values(spec: GraphSpec) -> set[str]:
    """Values with a tensor hook (register_hook) that require grad: the hooks a gradient
    transform registers (harness/paths/func.py GraphFunction.hooked)."""
    requires_grad = Dataflow(spec).requires_grad
    return {h.target for h in spec.hooks if h.kind == "tensor" and requires_grad.get(h.target, False)}


def _single_constant_outputs_vmapped(spec: GraphSpec) -> set[int]:
    """Functions with generate_vmap_rule whose forward returns one non-tensor value, not a
    tuple: vmapify_autograd_function's forward ends with `return *outputs, out_dims`."""
    return {n for n, fn in enumerate(spec.functions)
            if fn.vmap and not fn.tuple_output and fn.outputs[0].kind == "const"}


_vmap_unpack_error = raised("forward", r"Value after \* must be an iterable", TypeError)


def _constant_unpacked_by_vmap(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """`return *outputs, out_dims` unpacked such a value: a number, bool or None raises "Value
    after * must be an iterable"; a string of two or more characters unpacks into them, and the
    caller reads the first as the output (the rest as out_dims): 'tag' comes back as 't'."""
    if _vmap_unpack_error(spec, result, mismatches):
        return True
    return any(m in _unpacked_strings(spec) for m in ((m.role, m.detail) for m in mismatches
                                                         if m.checkpoint == "forward"))


def _unpacked_strings(spec: GraphSpec) -> set[tuple[str, str]]:
    """(role, mismatch detail) of each single string output as vmap returns it: its first character."""
    strings = ((n, spec.functions[n].outputs[0].value) for n in _single_constant_outputs_vmapped(spec))
    return {(f"const:f{n}.0", f"expected {value!r}, got {value[0]!r}") for n, value in strings
            if isinstance(value, str) and len(value) > 1}


def _batched_under_vmap(spec: GraphSpec) -> dict[str, bool]:
    """Which values are BatchedTensors inside the graph under vmap: every leaf (the func paths
    batch them all, harness/paths/func.py _sample_leaves), and what is computed from one."""
    batched = {ref: True for ref in spec.value_refs() if ref.startswith("x")}
    for n, fn in enumerate(spec.functions):
        for k, o in enumerate(fn.outputs):
            if o.kind == "compute":
                read = [fn.args[t.slot].ref for t in o.terms] + ([fn.args[o.mask].ref] if o.mask >= 0 else [])
                batched[f"f{n}.{k}"] = any(batched[r] for r in read)
            elif o.kind != "const":
                batched[f"f{n}.{k}"] = batched[fn.args[o.slot].ref]
    return batched


def _saving_output_and_for_forward(spec: GraphSpec) -> set[int]:
    """Functions with generate_vmap_rule and a jvp, whose backward runs under grad(vmap) (as in
    eager, or because func-grad-vmap-mark-non-differentiable-lost made it run), where what they
    save for backward and for forward (harness/build.py _setup) is batched differently: the
    vmapped ctx keeps one list of batch dims, which save_for_forward overwrites."""
    if not _eager_backward_runs(spec):
        return set()
    flow = Dataflow(spec)
    batched = _batched_under_vmap(spec)
    lost = _marks_lost_by_vmap(spec)
    found = set()
    for n, fn in enumerate(spec.functions):
        if not (fn.vmap and fn.jvp and (flow.backward_runs(n) or n in lost)):
            continue
        masks, nonlinear = ([batched[fn.args[s].ref] for s in slots] for slots in (fn.mask_slots, fn.nonlinear_slots))
        for_forward = masks + nonlinear
        for_backward = masks + (nonlinear if "inputs" in fn.save else [])
        if "intermediates" in fn.save:
            for_backward += [batched[fn.args[t.slot].ref] for o in fn.outputs for t in o.terms if t.op != "linear"]
        if "outputs" in fn.save:
            for_backward += [batched[f"f{n}.{k}"] for k in fn.tensor_outputs]
        if for_forward and for_backward and for_forward != for_backward:
            found.add(n)
    return found


def _saving_no_fresh_tensors(spec: GraphSpec) -> GraphSpec:
    """Those Functions save their inputs instead of output and intermediates (their backward
    recomputes from the inputs, which their nonlinear terms need)."""
    bad = _saving_output_and_for_forward(spec)

    def inputs_only(fn: FunctionSpec) -> tuple[str, ...]:
        kept = tuple(s for s in fn.save if s not in ("outputs", "intermediates"))
        return kept if "inputs" in kept else kept + ("inputs",)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, save=inputs_only(fn)) if n in bad else fn)


def _dirty_outputs_vmapped(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    """(Function, output) of each input marked dirty by a Function with generate_vmap_rule."""
    return tuple((n, k) for n, fn in enumerate(spec.functions) if fn.vmap
                 for k, o in enumerate(fn.outputs) if o.kind == "dirty")


def _marks_lost_by_vmap(spec: GraphSpec) -> set[int]:
    """Functions whose backward eager never calls, but grad(vmap) does: there a vmapped
    Function's output marked non-differentiable requires grad (the output is re-wrapped as a new
    BatchedTensor before setup_context, so the mark is on a wrapper; on an output without a batch
    dim, passed as it is, the mark holds), so a Function reading it has a node, and the engine
    runs every node on the way from the loss to a differentiated leaf, whatever gradient it
    gets: the marking Function's, and those of Functions that have a node only through such an
    output, transitively."""
    if not _eager_backward_runs(spec):
        return set()
    from harness.paths.func import loss_refs  # the path module imports this one's users

    flow = Dataflow(spec)
    rg = _requires_grad_under_grad_vmap(spec)
    in_loss = set(loss_refs(spec))  # eager's loss, the transform's too
    readers: dict[str, set[int]] = {}
    for m, fn in enumerate(spec.functions):
        for a in fn.args:
            if a.ref is not None:
                readers.setdefault(a.ref, set()).add(m)
    runs: set[int] = set()
    for n in reversed(range(len(spec.functions))):
        outputs = [f"f{n}.{k}" for k in spec.functions[n].tensor_outputs]
        if any(rg[r] and (r in in_loss or readers.get(r, set()) & runs) for r in outputs):
            runs.add(n)
    return {n for n in runs if not flow.backward_runs(n)}


def _vmapped_backward_of_lost_marks_raised(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The path raised at backward from the vmapped twin of such a Function (torch names it
    "VmappedF<n>Generated": its backward, or a saved tensor it unpacks), or torch's version-counter
    error for a value modified after the forward that only such a Function saved."""
    if result.status != "error" or result.error_checkpoint != "backward":
        return False
    lost, message = _marks_lost_by_vmap(spec), str(result.error)
    named = re.search(r"VmappedF(\d+)Generated", message)
    if named is not None:
        return int(named[1]) in lost
    flow = Dataflow(spec)
    return (VERSION_ERROR.search(message) is not None and not version_error_expected(spec)
            and bool(saved_mutated_outputs(spec, backward_runs=lambda n: flow.backward_runs(n) or n in lost)))


def _marks_lost_by_vmap_harmless(spec: GraphSpec) -> GraphSpec:
    """Those Functions' backwards raise nothing when they run: no deliberate invalid results,
    and what they save is not modified after the forward (the marks are still lost, but the
    generated backward ignores a marked output's gradient, so every value is compared)."""
    lost = _marks_lost_by_vmap(spec)
    read = {r for n in lost for r in [*(f"f{n}.{k}" for k in spec.functions[n].tensor_outputs),
                                       *(a.ref for a in spec.functions[n].args if a.ref is not None)]}
    spec = dataclasses.replace(spec, mutated_outputs=tuple(r for r in spec.mutated_outputs if r not in read))
    return _without_errors(lambda n, fn: n in lost)(spec)


def _requires_grad_under_grad_vmap(spec: GraphSpec) -> dict[str, bool]:
    """requires_grad of every value inside grad(vmap), at grad's level: computed from a leaf the
    transform differentiates (harness/paths/func.py chosen_leaves); a vmapped Function's outputs
    marked non-differentiable too where they have a batch dim, since those marks are lost (the
    outputs are re-wrapped before setup_context: func-grad-vmap-mark-non-differentiable-lost)."""
    from harness.paths.func import chosen_leaves  # the path module imports this one's users

    rg = Dataflow(spec).requires_grad_from(set(chosen_leaves(spec)))
    batched = _batched_under_vmap(spec)
    for n, fn in enumerate(spec.functions):
        from_inputs = any(rg[a.ref] for a in fn.args if a.ref is not None)
        for k in fn.tensor_outputs:
            ref = f"f{n}.{k}"
            rg[ref] = from_inputs and fn.outputs[k].kind != "const" and (
                not fn.outputs[k].non_differentiable or fn.vmap and batched[ref])
    return rg


def _dirty_unbatched_views(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    """(Function, output) of each input marked dirty that is a view with no batch dim under vmap,
    by a Function with generate_vmap_rule that has a node under grad(vmap) (an input requires
    grad there).

    vmap passes an input without a batch dim to the vmapped Function as it is (a batched one is
    re-wrapped: func-vmap-mark-dirty), so mark_dirty marks the view itself; the vmapped Function
    returns its outputs and their out_dims (vmapify_autograd_function, torch/_functorch/autograd_function.py),
    two outputs or more, and autograd refuses a dirty view in a Function with more than one
    output (custom_function.cpp). Under vmap(grad), vmap alone, or when no backward runs (the
    forward under vmap(vjp)), the vmapped Function is applied below autograd: no check."""
    if not _eager_backward_runs(spec):
        return ()
    batched = _batched_under_vmap(spec)
    rg = _requires_grad_under_grad_vmap(spec)
    return tuple((n, k) for n, fn in enumerate(spec.functions)
                 if fn.vmap and any(rg[a.ref] for a in fn.args if a.ref is not None)
                 for k, o in enumerate(fn.outputs)
                 if o.kind == "dirty" and fn.args[o.slot].view and not batched[fn.args[o.slot].ref])


def _once_differentiable_given_an_unbatched_gradient_that_requires_grad(spec: GraphSpec) -> set[int]:
    """Functions with generate_vmap_rule and @once_differentiable whose backward runs under
    grad(vmap), gets for an output without a batch dim a gradient that requires grad at the
    grad level, and returns a batched gradient.

    torch.func's grad runs the backward with create_graph=True, so a gradient that depends on a
    differentiated value requires grad. The vmapped backward receives the gradient of an output
    with no batch dim as it is (not a BatchedTensor, whose requires_grad reads False), so the
    once_differentiable wrapper (torch/autograd/function.py) sees a gradient that requires grad
    and sets requires_grad on detached copies of the results: on a BatchedTensor that raises.
    A gradient requires grad where a nonlinear derivative on its way from the loss is computed
    from a saved input that requires grad (harness/build.py _backward: an intermediate is saved
    in setup_context, under no grad, so it is a constant); the loss's weights are constants."""
    if not _eager_backward_runs(spec):
        return set()
    flow = Dataflow(spec)
    lost = _marks_lost_by_vmap(spec)
    batched = _batched_under_vmap(spec)
    rg = _requires_grad_under_grad_vmap(spec)
    runs = {n for n in range(len(spec.functions)) if flow.backward_runs(n) or n in lost}
    varies: dict[str, bool] = {}  # the gradient a value receives requires grad
    for m in reversed(range(len(spec.functions))):
        fn = spec.functions[m]
        for s, a in enumerate(fn.args):
            if a.ref is None or m not in runs or not rg[a.ref]:
                continue
            for k, o in enumerate(fn.outputs):
                if not differentiable(fn, k) or not reads(o.kind, o, s):
                    continue
                nonlinear = o.kind == "compute" and "inputs" in fn.save and any(
                    t.slot == s and t.op != "linear" for t in o.terms)
                if nonlinear or varies.get(f"f{m}.{k}", False):
                    varies[a.ref] = True
    found = set()
    for n in runs:
        fn = spec.functions[n]
        if not (fn.vmap and fn.once_differentiable):
            continue
        unbatched_varying = any(not batched[f"f{n}.{k}"] and varies.get(f"f{n}.{k}", False) for k in fn.tensor_outputs)
        batched_result = any(batched[a.ref] and rg[a.ref] and any(
            differentiable(fn, k) and batched[f"f{n}.{k}"] and reads(o.kind, o, s) for k, o in enumerate(fn.outputs))
            for s, a in enumerate(fn.args) if a.ref is not None)
        if unbatched_varying and batched_result:
            found.add(n)
    return found


def _differentiable_twice_where_once_meets_batching(spec: GraphSpec) -> GraphSpec:
    """Those Functions without @once_differentiable (their backward is the same)."""
    found = _once_differentiable_given_an_unbatched_gradient_that_requires_grad(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, once_differentiable=False) if n in found else fn)


def _wrong_shape_gradient_vmapped(spec: GraphSpec) -> bool:
    """A Function with generate_vmap_rule whose backward returns a wrongly shaped gradient, and runs
    (as in eager, or because func-grad-vmap-mark-non-differentiable-lost made it run)."""
    if not _eager_backward_runs(spec):
        return False
    lost = _marks_lost_by_vmap(spec)
    return any(fn.vmap and fn.error == "grad_shape" and (_backward_runs(spec, n) or n in lost)
               for n, fn in enumerate(spec.functions))


def _side_effect_functions_on_transformed_tensors(spec: GraphSpec) -> set[int]:
    """Functions with a Python side effect in their forward (`untraceable="side_effect"`) that
    receive a tensor computed inside a backward-side transform from its inputs (a view of a
    leaf, a clone, another Function's output), as harness/paths/func.py runs them: the leaves
    that require grad are the transform's inputs where eager runs a backward, else every float
    leaf (the forward under func.vjp). Torch 2.15 also fails on such an input passed as is."""
    from harness.paths.func import differentiated_leaves

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


def _version_error_not_raised(result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The path ran through the backward where the math oracle says torch's version-counter
    error must stop it (harness/check.py `_against_math`)."""
    return result.status != "error" and any(
        m.role == "error" and m.checkpoint == "backward"
        and m.detail.startswith("ran without torch's version-counter error") for m in mismatches)


def _backward_error_not_raised(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Eager raised autograd's documented error for a Function's invalid backward results (or
    the version-counter error for a saved output modified in place), and this path raised
    nothing: the backward was not called, the Function's saved tensors not used."""
    return _version_error_not_raised(result, mismatches) or result.status != "error" and any(
        m.role == "error" and m.checkpoint == "backward"
        and "eager raised RuntimeError at backward" in m.detail and _DOCUMENTED_BACKWARD_ERROR.search(m.detail)
        for m in mismatches)


def _rules_drop_visible(spec: GraphSpec) -> bool:
    """Where torch.compile dropping a Function's own rules under a transform shows: a backward
    that would raise (eager runs a backward), or an output marked non-differentiable, which the
    transform then differentiates through (the generated rules are otherwise true derivatives)."""
    return (_eager_backward_runs(spec) and (_invalid_backward_runs(spec) or version_error_expected(spec))
            or bool(spec.non_differentiable_refs()))


def _through_unmarked_outputs(spec: GraphSpec, m: Mismatch) -> bool:
    """A tangent of a non-differentiable output or of a value computed from one, or the gradient
    of a leaf it was computed from: what differentiating through the unmarked output changes."""
    flow = Dataflow(spec)
    marked = spec.non_differentiable_refs()
    if m.checkpoint == "forward_ad":
        return m.role.startswith("tangent:") and _ref_of(m.role) in flow.downstream(set(marked))
    leaves = {leaf for ref in marked for leaf in flow.upstream_leaves(ref)}
    return (m.checkpoint in ("backward", "double_backward") and m.role.startswith(("grad:", "agrad:", "dgrad:"))
            and _ref_of(m.role) in leaves)


def _rules_dropped(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    return _backward_error_not_raised(spec, result, mismatches) or result.status != "error" and any(
        m.against == "math" and _through_unmarked_outputs(spec, m) for m in mismatches)


def _nothing_marked_or_raised(spec: GraphSpec) -> GraphSpec:
    """No output marked non-differentiable, no deliberate backward error, no saved output
    modified in place after the forward."""
    spec = dataclasses.replace(_without_errors(lambda n, fn: fn.error is not None)(spec), mutated_outputs=())
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        dataclasses.replace(o, non_differentiable=False) for o in fn.outputs)))


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


def _unchanged(spec: GraphSpec) -> GraphSpec:
    """No smaller spec avoids the bug on this path (the path reports it as known)."""
    return spec


# --- compiled autograd ---------------------------------------------------------------------


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
        return [(n, s) for n in self.run for s, a in enumerate(self.spec.functions[n].args) if a.ref == ref]

    def _gets_gradient(self, ref: str) -> bool:
        """Does a defined gradient arrive at `ref`'s node at run time?"""
        return ref in self.entries or any(self.returns_gradient(n, s) for n, s in self.edges_into(ref))

    def output_gradient(self, n: int, k: int) -> bool:
        """Is the gradient Function n's backward gets for output k a tensor?"""
        ref = f"f{n}.{k}"
        return self.gets_gradient(ref) or self.spec.functions[n].materialize_grads and ref not in self.reached

    def returns_gradient(self, n: int, slot: int) -> bool:
        """Does Function n's backward return a tensor for this slot? (harness/build.py
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


def _none_added(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The TypeError of torch.add(None, g), at the backward whose structure the spec has."""
    return (raised("backward", _NONE_ADDED, TypeError)(spec, result, mismatches)
            and _none_meets_another_in_first_backward(spec)
            or raised("double_backward", _NONE_ADDED, TypeError)(spec, result, mismatches)
            and bool(_none_senders_in_second_backward(spec)))


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
    return spec.functions[n].args[-1].ref is not None


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


def _without_saved_tensors_hooks(spec: GraphSpec) -> GraphSpec:
    return dataclasses.replace(spec, hooks=tuple(h for h in spec.hooks if h.kind != "saved_tensors"),
                               checkpoint=False)


def _second_backward_entries(spec: GraphSpec) -> frozenset[str]:
    """Values the double backward's graph enters the forward graph by: the second backward
    (harness/run.py: autograd.grad of the weighted first-order gradients of the chosen leaves)
    reaches forward values only through the saved inputs that generated backwards compute
    nonlinear derivatives from (harness/build.py `_backward`: `g * c * deriv(saved input)`),
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
                   for s, a in enumerate(fn.args) if a.ref is not None)

    entries: set[str] = set()
    for m, fn in enumerate(spec.functions):
        if "inputs" not in fn.save or not flow.backward_runs(m):
            continue  # derivatives from intermediates are saved without a graph
        for k, out in enumerate(fn.outputs):
            if out.kind == "compute" and flow.requires_grad.get(f"f{m}.{k}", False):
                entries |= {fn.args[t.slot].ref for t in out.terms
                            if t.op != "linear" and reaches_chosen(fn.args[t.slot].ref)}
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
            reached |= {a.ref for a in fn.args if a.ref is not None and flow.requires_grad[a.ref]}
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


def _without_those_tensor_hooks(spec: GraphSpec) -> GraphSpec:
    bad = _tensor_hooked_outputs_without_second_order_edge(spec)
    return dataclasses.replace(spec, hooks=tuple(h for h in spec.hooks if not (h.kind == "tensor" and h.target in bad)))


# --- Dynamo --------------------------------------------------------------------------------


def _saved_mutated_outputs(spec: GraphSpec) -> set[str]:
    """Outputs modified in place after the forward that their own Function saved (as outputs),
    where that Function's backward runs. The generated backward unpacks them and reads only
    their shape (harness/build.py), so a traced backward needs none of their data."""
    return saved_mutated_outputs(spec, as_inputs=False)


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


def _generic_function_with_tensor_input(spec: GraphSpec) -> bool:
    """forward(*args) or forward(ctx, *args) with a tensor to shift: Dynamo binds the inputs shifted."""
    return any(_generic(fn) and fn.tensor_slots for fn in spec.functions)


def _wrong_forward_value_of_varargs_function(spec: GraphSpec, result: RunResult,
                                             mismatches: list[Mismatch]) -> bool:
    """An output of a generic Function differs in value or in what it aliases (an error the
    run met later, a deliberate one included, does not undo what the forward computed), or
    an earlier Function's output that a generic Function modifying an input in place was
    passed as is: with the inputs shifted, the in-place update lands on a neighbour of its
    (cloned) dirty input."""
    shifted = {n for n, fn in enumerate(spec.functions) if _generic(fn) and fn.tensor_slots}
    overwritten = {a.ref for n in shifted for a in spec.functions[n].args
                   if a.ref is not None and not a.clone and any(o.kind == "dirty" for o in spec.functions[n].outputs)}
    return any(
        m.checkpoint in ("forward", "meta:forward") and m.role.startswith(("out:f", "alias:f"))
        and (int(_ref_of(m.role)[1:].split(".")[0]) in shifted or _ref_of(m.role) in overwritten)
        for m in mismatches)


#: the release checks of the lifetime oracle: after the outputs, then everything, are dropped
_RELEASE_CHECKPOINTS = ("drop_outputs", "drop_all", "life:drop_outputs", "life:drop_all", "life:released")


def _released_late(spec: GraphSpec, m: Mismatch) -> bool:
    return m.checkpoint in _RELEASE_CHECKPOINTS


def _released_late_never_leaked(spec: GraphSpec, m: Mismatch) -> bool:
    """What a reference cycle damages: the release checks, but never a leak (what gc.collect()
    does not free is not the cycle's; a Function that keeps its inputs forever must still fail)."""
    leak = m.detail.endswith("(leak)") or (m.checkpoint == "life:released" and m.role == "leaks")
    return _released_late(spec, m) and not leak


def _released(result: RunResult, kind: str) -> tuple[str, ...]:
    return result.values.get("life:released", {}).get(kind, ())


def _leaf_count_above_start(result: RunResult) -> bool:
    start, dropped = result.values.get("life:start", {}), result.values.get("life:drop_outputs", {})
    return any(role in dropped and dropped[role][1] is not None and count is not None
               and dropped[role][1] > count for role, (_, count) in start.items())


def _a_function_backward_runs(spec: GraphSpec) -> bool:
    return any(_backward_runs(spec, n) for n in range(len(spec.functions)))


def _single_non_differentiable_outputs(spec: GraphSpec) -> set[int]:
    return {n for n, fn in enumerate(spec.functions)
            if not fn.tuple_output and fn.outputs[0].non_differentiable}


def _returned_as_tuples(which: Callable[[GraphSpec], set[int]]) -> Workaround:
    """Those Functions return their one output as a one-element tuple."""
    def workaround(spec: GraphSpec) -> GraphSpec:
        bad = which(spec)
        return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, tuple_output=True) if n in bad else fn)
    return workaround


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


def _inputs_returned_without_grad(spec: GraphSpec) -> set[str]:
    """Outputs that return an input as-is from a Function none of whose inputs requires grad."""
    flow = Dataflow(spec)
    return {f"f{n}.{k}" for n, fn in enumerate(spec.functions) if not flow.node_exists(n)
            for k, o in enumerate(fn.outputs) if o.kind == "input"}


def _returned_as_views(spec: GraphSpec) -> GraphSpec:
    bad = _inputs_returned_without_grad(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        OutputSpec("view", slot=o.slot) if f"f{n}.{k}" in bad else o for k, o in enumerate(fn.outputs))))


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
    gradient (non-leaves): AOT Autograd detaches each of them."""
    flow = Dataflow(spec)
    return frozenset(r for r in flow.leaf_values_read()
                     if "[" in r and flow.requires_grad[r] and not flow.receives_gradient(r))


def _outputs_without_grad_under_aot(spec: GraphSpec) -> frozenset[str]:
    """The Function outputs that require grad in eager but not once those views are detached:
    the ones computed from detached views only (every output, when all the compiled forward's
    inputs that require grad are such views)."""
    detached = _detached_views(spec)
    if not detached:
        return frozenset()
    flow = Dataflow(spec)
    rg = {r: flow.requires_grad[r] and r not in detached for r in flow.requires_grad if r.startswith("x")}
    for n, fn in enumerate(spec.functions):
        any_input = any(rg[a.ref] for a in fn.args if a.ref is not None)
        rg.update({f"f{n}.{k}": any_input and differentiable(fn, k) for k in fn.tensor_outputs})
    return frozenset(r for r, eager_rg in flow.requires_grad.items() if r.startswith("f") and eager_rg and not rg[r])


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
        inputs = [(slot, a.ref) for slot, a in enumerate(fn.args) if a.ref is not None and flow.requires_grad[a.ref]]
        if inputs and all(ref in lost or ("[" in ref or ref.startswith("f")) and not flow.gets_gradient(n, slot)
                          for slot, ref in inputs):
            lost |= {f"f{n}.{k}" for k in fn.tensor_outputs if flow.requires_grad[f"f{n}.{k}"]}
    return frozenset(lost)


def _some_lost_requires_grad_in_a_region(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """The run went through Dynamo's eager fallback (a graph break split the compiled forward),
    and some outputs lost requires_grad, each one that a split can lose."""
    lost = {_ref_of(m.role) for m in mismatches if m.checkpoint == "forward" and m.role.startswith("requires_grad:")
            and m.detail == "expected True, got False"}
    return (result.status != "error" and "eager fallback" in result.note
            and bool(lost) and lost <= _outputs_that_may_lose_grad_in_a_region(spec))


def _flags_and_records_of_outputs_lost_in_a_region(spec: GraphSpec, m: Mismatch) -> bool:
    """Those outputs' autograd flags, and at backward what is recorded of them (retained
    gradients, hooks); the backward itself still runs (the other regions' outputs require grad)
    and the leaves' gradients are unchanged: the detached inputs get none from their region."""
    lost = _outputs_that_may_lose_grad_in_a_region(spec)
    if m.checkpoint in ("forward", "meta:forward"):
        return m.role.startswith(("requires_grad:", "grad_fn:", "is_leaf:")) and _ref_of(m.role) in lost
    return m.checkpoint in ("backward", "meta:backward") and _ref_of(m.role.removeprefix("stride:")) in lost


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
    lost = {_ref_of(m.role) for m in mismatches if m.checkpoint == "forward" and m.role.startswith("requires_grad:")
            and m.detail == "expected True, got False"}
    return result.status != "error" and lost >= _outputs_without_grad_under_aot(spec)


def _flags_of_lost_outputs_and_the_skipped_backward(spec: GraphSpec, m: Mismatch) -> bool:
    """The lost outputs' autograd flags; at backward, what is recorded of them (retained
    gradients, hooks); and everything at backward when every output lost requires_grad (the
    path skipped the backward: no output required grad, so there was no loss to differentiate).
    The leaves' gradients are not changed otherwise: the detached views get none in eager either."""
    lost = _outputs_without_grad_under_aot(spec)
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


def _alias_of(m: Mismatch) -> str | None:
    return m.role[len("alias:"):] if m.checkpoint == "meta:forward" and m.role.startswith("alias:") else None


def _no_argument_functions_reading_needs_input_grad(spec: GraphSpec) -> set[int]:
    return {n for n, fn in enumerate(spec.functions) if not fn.args and fn.needs_input_grad == "saved"}


def _needs_input_grad_read_in_backward_only(spec: GraphSpec) -> GraphSpec:
    bad = _no_argument_functions_reading_needs_input_grad(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, needs_input_grad="read")
                               if n in bad else fn)


def _breaks_the_graph_itself(fn: FunctionSpec) -> bool:
    """Dynamo cannot trace this Function's apply as a whole: a user jvp, a `vjp` instead of
    `backward` ("Unsupported custom vjp"), one tensor passed twice, or a print or a branch on a
    tensor's value in its forward (a Python side effect it traces; stop 20's dynamo audits)."""
    refs = [a.ref for a in fn.args if a.ref is not None and not a.clone]
    return (fn.jvp or fn.backward_method == "vjp" or len(refs) != len(set(refs))
            or fn.untraceable in ("print", "data_branch"))


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


def _ref_of(role: str) -> str:
    return role.split(":", 1)[1] if ":" in role else role


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
    # eager's gradient is None (stop 20's 2.14.1 dynamo audit, spec a8ed736c)
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
    computed from one (it has a node only through it: stop 20's dynamo audit, spec 49deffdf)."""
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
    gradients of the values they were computed from, which no longer get their gradient."""
    lost, moved = _marks_shifted_by_constants(spec)
    if _lost_marks_damage(spec, lost, m):
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
    """In the Functions whose marks shift, the non-tensor outputs become computed constants
    (bias-only tensors): no index shifts, every mark and every other value stays."""
    lost, moved = _marks_shifted_by_constants(spec)
    shifted = {int(r[1:].split(".")[0]) for r in lost | moved}
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        OutputSpec("compute", bias=0.5) if n in shifted and o.kind == "const" else o for o in fn.outputs))
        if n in shifted else fn)


def _freed_only_by_gc(spec: GraphSpec, m: Mismatch) -> bool:
    """What a cycle holding a tensor shows: its use count stays up once the outputs are
    dropped, and it dies only under gc.collect()."""
    return (m.checkpoint == "drop_all" and m.detail.startswith("freed only by gc.collect()")
            or m.checkpoint == "drop_outputs" and m.detail.startswith("use count"))


_DOCUMENTED_BACKWARD_ERROR = re.compile(
    r"[Ff]unction \w+Backward returned (an incorrect number of gradients|a gradient different than None at "
    r"position \d+, but the corresponding forward input was not a Variable|an invalid gradient at index \d+)")
#: the same error, raised by the path itself (a Mismatch's detail), with the Function's number
_PATH_RAISED_DOCUMENTED_BACKWARD_ERROR = re.compile(
    r"^raised RuntimeError at backward: " + _DOCUMENTED_BACKWARD_ERROR.pattern.replace(r"\w+Backward", r"F(\d+)Backward"))


def _invalid_backward_runs(spec: GraphSpec) -> bool:
    return any(fn.error is not None and _backward_runs(spec, n) for n, fn in enumerate(spec.functions))


def _invalid_backward_traced(spec: GraphSpec) -> bool:
    """A Function that returns too few or wrongly shaped gradients on purpose, which Dynamo traces
    (it has a node and does not break the graph itself): Dynamo traces its backward while it
    compiles the forward (AutogradFunctionApplyVariable, rewire_bwd_graph_outputs), also where
    eager's backward never calls it (a partial backward that does not reach it; stop 20's
    dynamo audit, spec 82afbef1)."""
    flow = Dataflow(spec)
    return any(fn.error in ("grad_count", "grad_shape") and flow.node_exists(n) and not _breaks_the_graph_itself(fn)
               for n, fn in enumerate(spec.functions))


def _invalid_backward_checked_differently(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """Eager raised its documented error at backward and this path did not raise it there, or
    this path raised it (or compiled autograd's IndexError) somewhere else or under another name."""
    return any(m.role == "error" and (
        "eager raised RuntimeError at backward" in m.detail and _DOCUMENTED_BACKWARD_ERROR.search(m.detail)
        or _DOCUMENTED_BACKWARD_ERROR.search(m.detail) and "ApplyTemplateBackward" in m.detail
        or m.checkpoint == "forward" and "IndexError at forward: list index out of range" in m.detail)
        for m in mismatches)


def _dirty_sites(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    return tuple((n, k) for n, fn in enumerate(spec.functions) for k, o in enumerate(fn.outputs) if o.kind == "dirty")


def _dirty_sites_with_grad(spec: GraphSpec) -> tuple[tuple[int, int], ...]:
    flow = Dataflow(spec)
    return tuple((n, k) for n, fn in enumerate(spec.functions) if flow.node_exists(n)
                 for k, o in enumerate(fn.outputs) if o.kind == "dirty")


_CLASS_ATTRIBUTE = r"Unsupported python_type\(\) call.*AutogradFunctionVariable\(\)"


def _anything(spec: GraphSpec, m: Mismatch) -> bool:
    return True


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
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
               "own and the first input gets none (same shape as pytorch/pytorch#5871, closed; #33069 forbade "
               "only the several-outputs case). Given inputs (autograd.grad, backward(inputs=...)), CopySlices "
               "hits an INTERNAL ASSERT when only one of the two requires grad; compiled autograd adds the None "
               "the Function returns for that input and raises TypeError"),
        first=(2, 13, 0), last=None,
        # dynamo: where it gets to the backward (dynamo-mark-dirty-inplace-result raises at forward
        # first on 2.13.0); func: the gradient transforms run the same CopySlices (a false-positive
        # audit saw the INTERNAL ASSERT under func.grad and func.vjp on 2.13.0 and 2.14.1)
        paths=("eager", "owned", "borrowed", "compiled", "dynamo", "func", "func+dynamo"),
        reproducer="eager_dirty_view_not_first_input.py",
        trigger=lambda spec: bool(_dirty_views_not_first(spec)),
        witness=_misrouted_gradient_seen,
        damage=_misrouted_gradient_damage,
        damages=("the error at backward (the INTERNAL ASSERT, compiled autograd's TypeError, the missing "
                 "version-counter error of a saved output whose saver the misrouting cuts off); at backward, "
                 "the gradients, retained grads and hook records (and their strides) of the first tensor "
                 "input, of the view input and of everything upstream of them; with create_graph, the "
                 "second-order gradients of the leaves the misrouted gradient depends on"),
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
        trigger=lambda spec: bool(_early_return_sites(spec)),
        witness=_dropped_tangent_seen,
        damage=_downstream_of_dropped_tangents,
        damages="forward_ad tangents of the dropped outputs and of every value computed from them",
        workaround=lambda spec: _aliasing_output_as_copy(spec, _early_return_sites),
    ),
    KnownIssue(
        id="ca-none-gradient-accumulated",
        title=("Compiled autograd: a custom Function's backward returns None for an input whose "
               "gradient also arrives along another edge; the captured graph sums them with "
               "torch.add(None, g) and raises TypeError (eager skips undefined gradients); also in a double "
               "backward's second backward, where a Function with materialize_grads=False gets None for the "
               "outputs it does not reach"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),  # every mode; torch.compile modes raise it from fake tensors
        reproducer="ca_none_gradient_accumulated.py",
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
        trigger=_double_backward_through_unpacked_saved_tensors,
        witness=lambda spec, result, ms: any(m.checkpoint == "double_backward" and m.role.startswith("dgrad:")
                                             for m in ms),
        # retained grads and tensor hooks also see the second backward's (lost) contributions
        damage=lambda spec, m: m.checkpoint == "double_backward" and m.role.startswith("dgrad:") or (
            m.checkpoint == "backward" and m.role.startswith(("retained:", "hook"))),
        damages="second-order gradients (double_backward dgrad:*), and retained grads and hook-seen "
                "gradients at backward, which the second backward adds to",
        workaround=_without_saved_tensors_hooks,
    ),
    KnownIssue(
        id="ca-tensor-hook-unreached-output",
        title=("Compiled autograd: a tensor hook on one output of a multi-output node (a custom Function) "
               "that the backward runs without a gradient edge into that output is traced with None, and "
               "reorder_tensor_pre_hook_nodes raises AttributeError \"'NoneType' object has no attribute "
               "'op'\" (is_placeholder(None)); eager calls the hook with None"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_tensor_hook_unreached_output.py",
        trigger=lambda spec: bool(_tensor_hooked_outputs_without_second_order_edge(spec)),
        witness=raised("backward", r"^'NoneType' object has no attribute 'op'$", AttributeError),
        damage=error_at("backward"),  # the path reports every compiled-autograd error at backward
        damages="the error at backward (raised by the double backward's capture)",
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
        trigger=lambda spec: spec.backward != "none",
        witness=lambda spec, result, ms: bool(_released(result, "leaks")),
        damage=_released_late,
        damages="the release checks (drop_outputs, drop_all: leaks, use counts)",
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
        trigger=_a_function_backward_runs,
        witness=lambda spec, result, ms: bool(_released(result, "cycles")) or _leaf_count_above_start(result),
        damage=_released_late_never_leaked,
        damages="the release checks (drop_outputs use counts, drop_all: reference cycles; never a leak)",
        workaround=lambda spec: spec,  # every custom Function's backward: no spec avoids it
        any_function=True,
    ),
    KnownIssue(
        id="dynamo-function-class-attribute",
        title=("torch.compile: reading a plain class attribute of a custom autograd.Function (a "
               "flag, a config object) fails with the graph break 'Unsupported python_type() call', "
               "whose own hint calls it a Dynamo bug"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_function_class_attribute.py",
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
        trigger=_generic_function_with_tensor_input,
        # What the shift breaks first varies with the graph (an input past the end, the ctx
        # or a constant where a tensor was passed, an output that is then no tensor); all of
        # it is an exception the traced forward raised, which Dynamo renders as a constant
        # (or a TypeError of an op given a constant), where eager's forward raised nothing.
        # (torch 2.13 renders it "ConstantVariable(str: ...)", 2.14 "raised exception E(...)").
        # func.jvp+dynamo runs its forward inside forward AD: the error is at forward_ad there.
        witness=raised(("forward", "forward_ad"), r"^['\"]?((LazyVariableTracker\(realized: )?ConstantVariable\(str: "
                                  r"|raised exception \w+\()|index out of range"
                                  r"|unsupported operand type\(s\) for .*'NoneType'"
                                  r"|argument '\w+' \(position \d+\) must be Tensor, not \w+"
                                  # the ctx reaching a torch op crashes Dynamo itself
                                  r"|'AutogradFunctionContextVariable' object has no attribute 'proxy'"
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
                                  r"|^Function \d+ returned \w+ for its output \d+, a tensor in its spec$"),
        damage=error_at("forward", "forward_ad"),
        damages="the error at forward (at forward_ad under func.jvp+dynamo)",
        workaround=_all_plain,
    ),
    KnownIssue(
        id="dynamo-unread-saved-output-unchecked",
        title=("torch.compile: a custom Function saves its output, its backward unpacks it without reading "
               "its values, and the caller modifies that output in place before backward: eager raises the "
               "version-counter error, the compiled run does not (AOT Autograd keeps no data it does not "
               "read, so nothing is checked); the gradients are right"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_unread_saved_output_unchecked.py",
        trigger=lambda spec: bool(_saved_mutated_outputs(spec)),
        witness=_version_error_missing,
        damage=error_at("backward"),
        damages="the missing error at backward (compared with eager's and the math oracle's)",
        workaround=_saved_outputs_not_mutated,
    ),
    KnownIssue(
        id="dynamo-function-varargs-forward-values",
        title=("The wrong-value side of dynamo-function-varargs-forward: a Function whose "
               "forward(*args) reads shifted inputs returns wrong outputs without an error"),
        first=(2, 13, 0), last=(2, 14, 1),  # its reproducer passes on 2.15.0
        paths=("dynamo", "func+dynamo"),
        reproducer="dynamo_function_varargs_forward.py",
        trigger=_generic_function_with_tensor_input,
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
        paths=("dynamo",),
        reproducer="dynamo_single_non_differentiable_output.py",
        trigger=lambda spec: bool(_single_non_differentiable_outputs(spec)),
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
        trigger=lambda spec: bool(_single_constant_outputs(spec)),
        path_triggers={"func+dynamo": lambda spec: bool(_single_constant_outputs(spec, any_tensor_input=True))},
        witness=_constant_iterated,
        damage=lambda spec, m: error_at("forward")(spec, m) or (
            m.checkpoint == "forward" and m.role in {f"const:f{n}.0" for n in _single_constant_outputs_on(m.path)(spec)}),
        damages="the error at forward (or the constant output, split into characters)",
        workaround=_returned_as_tuples(lambda spec: _single_constant_outputs(spec, any_tensor_input=True)),
    ),
    KnownIssue(
        id="inductor-complex-empty-view-dtype",
        title=("torch.compile with the inductor backend cannot compile elementwise arithmetic on an empty "
               "complex tensor: it views its float result back as complex with aten.view.dtype, whose stride "
               "check rejects the empty tensor's strides (\"must be divisible by 2 to view Float as "
               "ComplexFloat\", \"must be 1 to view ...\"); eager computes the empty result "
               "(pytorch/pytorch#190274, open)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:inductor",),  # compiled autograd's inductor backward graphs were not seen to hit it
        reproducer="inductor_complex_empty_view_dtype.py",
        trigger=lambda spec: spec.dtype in COMPLEX_DTYPES and 0 in spec.shape,
        witness=_complex_viewed_from_float,
        damage=error_at("forward", "backward", "double_backward"),
        damages="the error (what completed before it is still compared)",
        workaround=_in_real_dtype,
    ),
    KnownIssue(
        id="dynamo-input-returned-as-is-not-a-view",
        title=("torch.compile: a custom Function returning an input as-is, none of whose inputs requires "
               "grad, returns the input tensor itself; eager returns a view of it (custom_function.cpp, "
               "_view_as_self_with_no_grad)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_input_returned_as_is_not_a_view.py",
        trigger=lambda spec: bool(_inputs_returned_without_grad(spec)),
        witness=lambda spec, result, ms: any(
            _alias_of(m) in _inputs_returned_without_grad(spec) and m.detail.startswith("expected 'view of ")
            and "got 'is " in m.detail for m in ms),
        damage=lambda spec, m: _alias_of(m) in _inputs_returned_without_grad(spec),
        damages="the alias relation (meta:forward alias:*) of those outputs",
        workaround=_returned_as_views,
    ),
    KnownIssue(
        id="dynamo-aot-detached-input-drops-requires-grad",
        title=("torch.compile with an AOT Autograd backend: when the only inputs of the compiled region "
               "that require grad are non-leaf tensors (views of leaves) that get no gradient (the "
               "Function's backward returns None for them), AOT Autograd detaches them "
               "(graph_compile.py, indices_of_inps_to_detach), so custom Function outputs that require "
               "grad in eager come back with requires_grad=False and no grad_fn"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="dynamo_aot_detached_input_drops_requires_grad.py",
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
        trigger=lambda spec: bool(_outputs_that_may_lose_grad_in_a_region(spec)),
        witness=_some_lost_requires_grad_in_a_region,
        damage=_flags_and_records_of_outputs_lost_in_a_region,
        damages=("requires_grad, grad_fn and is_leaf of those outputs (forward, meta:forward); at backward, what is "
                 "recorded of them (retained gradients, hooks)"),
        workaround=_zeros_from_functions_losing_grad_in_a_region,
    ),
    KnownIssue(
        id="dynamo-hook-on-output-used-inside",
        title=("torch.compile with an AOT Autograd backend differentiates the compiled region as one node "
               "(pytorch/pytorch#91468, open): a hook registered on an output that the region also uses "
               "inside sees only the gradient from outside, so retain_grad gives a partial .grad and a "
               "hook that changes the gradient changes only that part"),
        first=(2, 13, 0), last=None,
        paths=("dynamo:aot_eager", "dynamo:inductor"),
        reproducer="dynamo_hook_on_output_used_inside.py",
        trigger=lambda spec: bool(_hooks_on_outputs_used_inside(spec)),
        witness=lambda spec, result, ms: any(m.checkpoint == "backward" and _gradient_seen_by(spec, m) for m in ms),
        damage=_gradient_seen_by,
        damages=("at backward, the retained grad of each such hooked output; for a tensor hook, the gradients, "
                 "retained grads and hook records of every value upstream of it (and their strides)"),
        workaround=_without_hooks_on_outputs_used_inside,
    ),
    KnownIssue(
        id="dynamo-no-inputs-needs-input-grad-none",
        title=("torch.compile: in the forward of a custom Function applied with no arguments, "
               "ctx.needs_input_grad is None (eager: ()), since AutogradFunctionContextVariable.create "
               "sets it only `if args`; tuple(ctx.needs_input_grad) raises TypeError"),
        # 2.14.1 raises AttributeError instead (the next entry); 2.14.0 was not tried
        first=(2, 13, 0), last=(2, 13, 0),
        paths=("dynamo",),
        reproducer="dynamo_function_no_inputs_needs_input_grad.py",
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
        trigger=lambda spec: bool(_no_argument_functions_reading_needs_input_grad(spec)),
        witness=raised("forward", r"'FunctionCtx' object has no attribute 'needs_input_grad'", AttributeError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_needs_input_grad_read_in_backward_only,
    ),
    KnownIssue(
        id="dynamo-fallback-drops-mark-non-differentiable",
        title=("torch.compile's eager fallback for a custom Function it cannot trace: Dynamo then compiles "
               "the forward frame with the real ctx, records ctx.mark_non_differentiable only on its "
               "stand-in, and the output comes back requiring grad (with a grad_fn)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_fallback_drops_mark_non_differentiable.py",
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
        trigger=lambda spec: any(_marks_shifted_by_constants(spec)),
        witness=_shifted_marks_seen,
        damage=_shifted_marks_and_what_follows,
        damages=("requires_grad, grad_fn and is_leaf of the outputs the marks move to or from and of what is "
                 "computed from them; at backward, the gradients of what an output that lost its gradient was "
                 "computed from, and what a backward eager skipped records or raises"),
        workaround=_constants_before_marks_as_tensors,
    ),
    KnownIssue(
        id="dynamo-fallback-dirty-view-made-in-no-grad",
        title=("torch.compile (backend aot_eager): a view of a fresh tensor that does not require grad, made in a "
               "compiled region and passed across a graph break to a custom Function that modifies it in place "
               "(mark_dirty) while another input requires grad, raises RuntimeError 'A view was created in "
               "no_grad mode and is being modified inplace with grad mode enabled': AOT Autograd ran that region "
               "under no_grad (nothing in it requires grad); related, closed: pytorch/pytorch#103153"),
        first=(2, 13, 0), last=None,
        # the eager and inductor backends run it (inductor tried on 2.13.0)
        paths=("dynamo:aot_eager",),
        reproducer="dynamo_fallback_dirty_view_made_in_no_grad.py",
        trigger=lambda spec: bool(_dirty_views_of_no_grad_clones(spec)),
        witness=raised("forward", r"A view was created in no_grad mode and is being modified inplace with grad "
                                  r"mode enabled", RuntimeError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=_no_grad_clone_views_as_whole_clones,
    ),
    KnownIssue(
        id="dynamo-trace-state-cycle",
        title=("torch.compile: Dynamo's trace state keeps real tensors in reference cycles that only a full "
               "gc.collect() frees: the abandoned trace of a frame it skipped after a graph break inside an "
               "enumerate loop (reproduced standalone), and SideEffects of a finished trace holding a "
               "Function's ctx (the holder of ca-dynamo-function-ctx-cycle; seen here without a standalone "
               "reproducer, with ctx attributes set in forward)"),
        first=(2, 13, 0), last=None,
        paths=("dynamo",),
        reproducer="dynamo_skipped_frame_tracer_cycle.py",
        # every dynamo run traces the graph's Functions: a real cycle made under dynamo is masked
        # too (leaks still fail; eager and native paths judge cycles without this entry)
        trigger=lambda spec: bool(spec.functions),
        witness=lambda spec, result, ms: bool(_released(result, "cycles")) and not _released(result, "leaks"),
        damage=_freed_only_by_gc,
        damages=("drop_all: 'freed only by gc.collect()' (cycles, never leaks), and the use counts this "
                 "keeps up at drop_outputs"),
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
        paths=("dynamo",),
        reproducer="dynamo_function_backward_checked_differently.py",
        trigger=lambda spec: _invalid_backward_runs(spec) or _invalid_backward_traced(spec),
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
        id="ca-function-vjp-ignored",
        title=("Compiled autograd calls a custom Function's `backward` directly "
               "(torch/_dynamo/external_utils.py call_backward), ignoring a `vjp` defined instead, its "
               "documented alias: NotImplementedError 'You must implement either the backward or vjp method'"),
        first=(2, 13, 0), last=None,
        paths=("compiled",),
        reproducer="ca_function_vjp_ignored.py",
        trigger=_vjp_backward_runs,
        witness=raised("backward", r"^You must implement either the backward or vjp method", NotImplementedError),
        damage=error_at("backward"),
        damages="the error at backward",
        workaround=_vjp_as_backward,
    ),
    KnownIssue(
        id="func-function-vjp-ignored",
        title=("torch.func's single-level Function (torch/_functorch/autograd_function.py, "
               "generate_single_level_function) calls a custom Function's `backward` only, ignoring a `vjp` "
               "defined instead, its documented alias: NotImplementedError 'You must implement either the "
               "backward or vjp method' where eager autograd runs the vjp"),
        first=(2, 13, 0), last=None,
        # backward mode; under torch.compile after Dynamo's graph break ("Unsupported custom vjp"
        # or "... jvp"), whose eager fallback runs torch.func as eager does
        paths=tuple(f"func.{t}{c}" for t in ("grad", "vjp", "jacrev", "vmap_grad", "grad_vmap")
                    for c in ("", "+dynamo")),
        reproducer="func_function_vjp_ignored.py",
        trigger=lambda spec: _eager_backward_runs(spec) and _vjp_backward_runs(spec),
        # grad(vmap) also calls the backward of a Function whose lost marks let it run there
        # (func-grad-vmap-mark-non-differentiable-lost)
        path_triggers={f"func.grad_vmap{c}": lambda spec: _eager_backward_runs(spec) and (
            _vjp_backward_runs(spec) or any(spec.functions[n].backward_method == "vjp" for n in _marks_lost_by_vmap(spec)))
            for c in ("", "+dynamo")},
        witness=raised("backward", r"^You must implement either the backward or vjp method", NotImplementedError),
        damage=error_at("backward"),
        damages="the error at backward (the gradients; the forward is still compared)",
        workaround=_vjp_as_backward,
    ),
    KnownIssue(
        id="func-vmap-single-constant-output",
        title=("torch.func.vmap over a custom Function with generate_vmap_rule=True whose forward returns one "
               "non-tensor value (not a tuple) raises \"TypeError: Value after * must be an iterable\": "
               "vmapify_autograd_function's forward (torch/_functorch/autograd_function.py) ends with "
               "`return *outputs, out_dims`; eager returns the value, and returning (x, value) runs under vmap. "
               "A string is iterable: it is unpacked into its characters and comes back as its first one, silently"),
        first=(2, 13, 0), last=None,
        # every path that vmaps the forward with the generated rule (jacfwd vmaps its jvp, so its
        # forward); under torch.compile when Dynamo falls back to eager torch.func
        paths=tuple(f"func.{t}{c}" for t in ("vmap", "vmap_grad", "grad_vmap", "jacfwd") for c in ("", "+dynamo")),
        reproducer="func_vmap_single_constant_output.py",
        trigger=lambda spec: bool(_single_constant_outputs_vmapped(spec)),
        # func.jacfwd runs its forward un-vmapped when eager runs no backward (harness/paths/func.py)
        path_triggers={f"func.jacfwd{c}": lambda spec: _eager_backward_runs(spec)
                       and bool(_single_constant_outputs_vmapped(spec)) for c in ("", "+dynamo")},
        witness=_constant_unpacked_by_vmap,
        damage=lambda spec, m: error_at("forward")(spec, m) or (
            m.checkpoint == "forward" and (m.role, m.detail) in _unpacked_strings(spec)),
        damages="the error at forward; for a string value, that constant at forward (its first character)",
        workaround=_returned_as_tuples(_single_constant_outputs_vmapped),
    ),
    KnownIssue(
        id="func-jacfwd-aux-empty-input",
        title=("torch.func.jacfwd(has_aux=True) on an input with zero elements raises \"IndexError: index 0 is "
               "out of bounds for dimension 0 with size 0\" at `flat_aux = [value[0] for value in flat_aux]` "
               "(torch/_functorch/eager_transforms.py); jacrev with aux and jacfwd without aux work"),
        first=(2, 13, 0), last=None,
        paths=("func.jacfwd", "func.jacfwd+dynamo"),  # harness/paths/func.py returns the outputs as jacfwd's aux
        reproducer="func_jacfwd_aux_empty_input.py",
        trigger=lambda spec: 0 in spec.shape and _eager_backward_runs(spec),
        # at forward under torch.compile: Dynamo raises it while tracing the whole transform,
        # before any of it ran (the path's phase update is a traced side effect, never applied)
        witness=raised(("backward", "forward"), r"index 0 is out of bounds for dimension 0 with size 0", IndexError),
        damage=error_at("backward", "forward"),
        damages="the error at backward (the Jacobian; the forward is still compared); under torch.compile at forward",
        workaround=_unchanged,
    ),
    KnownIssue(
        id="func-grad-vmap-saved-output-and-forward",
        title=("torch.func.grad over vmap of a custom Function with generate_vmap_rule=True that saves tensors "
               "for backward and for forward AD: the vmapped ctx (CtxCustomSave, torch/_functorch/autograd_function.py) "
               "keeps one list of batch dims, which save_for_forward overwrites, so the backward unpacks its saved "
               "tensors with the forward's batch dims: \"AssertionError: flat_bdims must not be None\" (restore_vmap "
               "-> wrap_batched, torch/_functorch/vmap.py), \"ValueError: SmallVector unable to grow\" or a shape error "
               "(\"The size of tensor a (3) must match the size of tensor b (4)\") where the two lists are batched "
               "differently (e.g. an output saved for backward, or an unbatched input); grad "
               "and vmap(grad) work, and dropping either save does"),
        first=(2, 13, 0), last=None,
        # +dynamo: where Dynamo breaks the graph (a print or side effect in a forward; on 2.13 any
        # user jvp, "Unsupported hasattr call"), its eager fallback runs torch.func eagerly
        paths=("func.grad_vmap", "func.grad_vmap+dynamo"),
        reproducer="func_grad_vmap_saved_output_and_forward.py",
        trigger=lambda spec: bool(_saving_output_and_for_forward(spec)),
        # where the two lists have the same length, a batched value is unpacked as unbatched and
        # the reverse: a shape error between the batch size and a size of the graph's shape
        witness=raised("backward", r"flat_bdims must not be None|SmallVector unable to grow|"
                                   r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\)"),
        damage=error_at("backward"),
        damages="the error at backward (the gradients; the forward is still compared)",
        workaround=_saving_no_fresh_tensors,
    ),
    KnownIssue(
        id="func-grad-vmap-mark-non-differentiable-lost",
        title=("torch.func.grad over vmap of a custom Function with generate_vmap_rule=True loses "
               "ctx.mark_non_differentiable: vmapify_autograd_function (torch/_functorch/autograd_function.py) "
               "runs the user's setup_context on outputs re-wrapped as new BatchedTensors, so the mark lands on a "
               "wrapper; the output gets a gradient and the backward receives it (grad(vmap) differs from grad, "
               "vmap(grad) and eager, with no error; the cause of func-vmap-mark-dirty)"),
        first=(2, 13, 0), last=None,
        paths=("func.grad_vmap", "func.grad_vmap+dynamo"),
        reproducer="func_grad_vmap_mark_non_differentiable_lost.py",
        trigger=lambda spec: bool(_marks_lost_by_vmap(spec)),
        witness=_vmapped_backward_of_lost_marks_raised,
        damage=error_at("backward"),
        damages=("the error at backward: a backward eager never calls runs and raises (its deliberate invalid "
                 "results, or torch's version-counter error for a saved output modified after the forward); "
                 "the forward is still compared"),
        workaround=_marks_lost_by_vmap_harmless,
    ),
    KnownIssue(
        id="func-vmap-mark-dirty",
        title=("torch.func.vmap over a custom Function with generate_vmap_rule=True that marks an input dirty "
               "raises \"Some elements marked as dirty during the forward method were not returned as output\": "
               "vmapify_autograd_function (torch/_functorch/autograd_function.py) runs the user's setup_context "
               "on inputs re-wrapped as new BatchedTensors, so ctx.mark_dirty marks a wrapper, not the returned "
               "tensor; eager and torch.func.grad run it"),
        first=(2, 13, 0), last=None,
        # every path that vmaps the forward with the generated rule (jacfwd vmaps its jvp, so its
        # forward); under torch.compile when Dynamo falls back to eager torch.func
        paths=tuple(f"func.{t}{c}" for t in ("vmap", "vmap_grad", "grad_vmap", "jacfwd") for c in ("", "+dynamo")),
        reproducer="func_vmap_mark_dirty.py",
        trigger=lambda spec: bool(_dirty_outputs_vmapped(spec)),
        # func.jacfwd runs its forward un-vmapped when eager runs no backward (harness/paths/func.py)
        path_triggers={f"func.jacfwd{c}": lambda spec: _eager_backward_runs(spec) and bool(_dirty_outputs_vmapped(spec))
                       for c in ("", "+dynamo")},
        witness=raised("forward", r"Some elements marked as dirty during the forward method were not returned",
                       RuntimeError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=lambda spec: _aliasing_output_as_copy(spec, _dirty_outputs_vmapped),
    ),
    KnownIssue(
        id="func-grad-vmap-dirty-unbatched-view",
        title=("torch.func.grad over vmap of a custom Function with generate_vmap_rule=True that marks dirty an input "
               "that is a view without a batch dim raises \"If your Function modifies inplace an input that is a view "
               "of another Tensor, your Function cannot return more than one Tensor\" though it returns one: the "
               "vmapped Function (vmapify_autograd_function, torch/_functorch/autograd_function.py) returns its "
               "outputs and their out_dims, and an unbatched input reaches it, and mark_dirty, as itself; eager, "
               "grad, vmap and vmap(grad) run it"),
        first=(2, 13, 0), last=None,
        paths=("func.grad_vmap", "func.grad_vmap+dynamo"),  # +dynamo: after a graph break, eager torch.func
        reproducer="func_grad_vmap_dirty_unbatched_view.py",
        trigger=lambda spec: bool(_dirty_unbatched_views(spec)),
        witness=raised("forward", r"modifies inplace an input that is a view of another Tensor, your Function "
                                  r"cannot return more than one Tensor", RuntimeError),
        damage=error_at("forward"),
        damages="the error at forward",
        workaround=lambda spec: _aliasing_output_as_copy(spec, _dirty_unbatched_views),
    ),
    KnownIssue(
        id="func-grad-grad-tensor-hook-outer-level",
        title=("torch.func.grad of grad does not call a tensor hook (Tensor.register_hook) in the outer "
               "differentiation: the hook is registered on the inner level's tensor and fires only there, where "
               "eager autograd calls it 'every time a gradient with respect to the Tensor is computed', the "
               "second backward of a double backward included; second-order gradients through a hooked value "
               "differ (eager [27, 7], torch.func [16.2, 4.2] in the reproducer)"),
        first=(2, 13, 0), last=None,
        # only func.grad computes second-order roles (Transform.double); +dynamo: Dynamo runs torch.func
        paths=("func.grad", "func.grad+dynamo"),
        reproducer="func_grad_grad_tensor_hook_outer_level.py",
        trigger=lambda spec: spec.backward == "double" and bool(_tensor_hooked_values(spec)),
        witness=lambda spec, result, ms: any(m.checkpoint == "double_backward" and m.role.startswith("dgrad:")
                                             for m in ms),
        damage=lambda spec, m: m.checkpoint == "double_backward" and m.role.startswith("dgrad:"),
        damages="second-order gradients (double_backward dgrad:*)",
        workaround=lambda spec: dataclasses.replace(spec, hooks=tuple(
            h for h in spec.hooks if h.kind != "tensor" or h.target not in _tensor_hooked_values(spec))),
    ),
    KnownIssue(
        id="func-grad-vmap-wrong-shape-gradient",
        title=("torch.func.grad over vmap of a custom Function with generate_vmap_rule=True whose backward returns "
               "a wrongly shaped gradient raises \"size {[3]} is not expandable to size {[4]}\" from reductify's "
               "sum_to_size (vmapify_autograd_function, torch/_functorch/autograd_function.py) instead of autograd's "
               "\"Function ... returned an invalid gradient at index 0\" (eager, grad, vmap(grad)); an error-message "
               "divergence, no value is affected"),
        first=(2, 13, 0), last=None,
        paths=("func.grad_vmap", "func.grad_vmap+dynamo"),  # +dynamo: after a graph break, eager torch.func
        reproducer="func_grad_vmap_wrong_shape_gradient.py",
        trigger=_wrong_shape_gradient_vmapped,
        witness=raised("backward", r"is not expandable to size", RuntimeError),
        damage=error_at("backward"),
        damages="the error at backward (its message; the forward is still compared)",
        workaround=_without_errors(lambda n, fn: fn.vmap and fn.error == "grad_shape"),
    ),
    KnownIssue(
        id="func-grad-vmap-once-differentiable-batched-result",
        title=("torch.func.grad over vmap of a custom Function with generate_vmap_rule=True and a "
               "@once_differentiable backward raises \"RuntimeError: accessing `data` under vmap transform is not "
               "allowed\" when an output without a batch dim gets a gradient that requires grad (grad runs the "
               "backward with create_graph=True): the once_differentiable wrapper (torch/autograd/function.py) then "
               "sets requires_grad on detached copies of the results, and a batched result is a BatchedTensor; "
               "grad and vmap(grad) work"),
        first=(2, 13, 0), last=None,
        paths=("func.grad_vmap", "func.grad_vmap+dynamo"),  # +dynamo: after a graph break, eager torch.func
        reproducer="func_grad_vmap_once_differentiable_batched_result.py",
        trigger=lambda spec: bool(_once_differentiable_given_an_unbatched_gradient_that_requires_grad(spec)),
        witness=raised("backward", r"accessing `data` under vmap transform is not allowed", RuntimeError),
        damage=error_at("backward"),
        damages="the error at backward (the gradients; the forward is still compared)",
        workaround=_differentiable_twice_where_once_meets_batching,
    ),
    KnownIssue(
        id="func-dynamo-custom-rules-dropped",
        title=("torch.compile of a torch.func transform over a custom Function inlines the Function's forward and "
               "drops its own rules: the transform differentiates (or batches) the inlined ops, never calling the "
               "custom backward, jvp or vmap, and ignoring ctx.mark_non_differentiable, with no error or graph "
               "break even under fullgraph=True (pytorch/pytorch#193279 backward, #192985 jvp): a backward whose "
               "results autograd would reject raises nothing, and a non-differentiable output gets a tangent and "
               "passes gradients"),
        first=(2, 13, 0), last=None,
        paths=("func+dynamo",),
        reproducer="func_dynamo_custom_rules_dropped.py",
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
        trigger=lambda spec: spec.forward_ad and _scalar_terms_below_float64(spec),
        # func.jacfwd runs forward AD where eager runs a backward (harness/paths/func.py)
        path_triggers={"func.jacfwd+dynamo": lambda spec: _eager_backward_runs(spec)
                       and _scalar_terms_below_float64(spec)},
        witness=lambda spec, result, ms: result.status != "error" and any(_float64_derivative(spec, m) for m in ms),
        damage=_float64_derivative,
        damages="the dtype of tangents (func.jvp) or of gradients from forward-mode Jacobians (func.jacfwd)",
        workaround=lambda spec: dataclasses.replace(spec, dtype="float64"),
    ),
)


def hits(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> list[KnownIssue]:
    """The known issues that happened on this path's run."""
    return [k for k in KNOWN_ISSUES if k.hit(spec, result, mismatches)]


def function_hits(result: RunResult, mismatches: list[Mismatch]) -> list[KnownIssue]:
    """The known issues that happened on a path's run of a user's own Function (check_function):
    the entries that need no graph structure (`any_function`), on the path, torch and witness."""
    return [k for k in KNOWN_ISSUES if k.any_function and k.affects_path(result.path)
            and k.affects_installed_torch() and k.witness(None, result, mismatches)]


def explained(spec: GraphSpec, issues: list[KnownIssue], m: Mismatch) -> bool:
    return any(k.damage(spec, m) for k in issues)


def workaround(spec: GraphSpec, issues: list[KnownIssue]) -> GraphSpec:
    """The spec with every given issue's workaround applied."""
    for k in issues:
        spec = k.workaround(spec)
    return spec


def trigger_rates(examples: int) -> list[tuple[KnownIssue, float]]:
    """Each entry with its share of `examples` generated specs whose structure triggers it."""
    from hypothesis import HealthCheck, given, settings

    from strategies import graphs

    specs: list[GraphSpec] = []

    @settings(max_examples=examples, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(graphs())
    def draw(spec: GraphSpec) -> None:
        specs.append(spec)

    draw()
    return [(k, sum(map(k.trigger, specs)) / max(1, len(specs))) for k in KNOWN_ISSUES]


def reproduce(issue: KnownIssue) -> tuple[str, str]:
    """Run an entry's reproducer on the installed torch: (state, last line it printed).

    state is "present" (exit 1 and REPRODUCED), "fixed" (exit 0) or "broken": the reproducer
    itself failed some other way, which says nothing about the bug and must be looked at."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(REPRODUCERS / issue.reproducer)], capture_output=True,
                          text=True, timeout=600)
    if done.returncode == 1 and "REPRODUCED" in done.stdout:
        state = "present"
    elif done.returncode == 0:
        state = "fixed"
    else:
        state = "broken"
    lines = (done.stdout + done.stderr).strip().splitlines() or [f"exit status {done.returncode}"]
    return state, lines[-1]


def run_reproducers() -> list[tuple[KnownIssue, str, str]]:
    """(entry, state, last line) for every entry; see `reproduce`."""
    return [(issue, *reproduce(issue)) for issue in KNOWN_ISSUES]


__all__ = ["KNOWN_ISSUES", "KnownIssue", "explained", "hits", "reproduce", "run_reproducers", "torch_release",
           "trigger_rates", "workaround"]
