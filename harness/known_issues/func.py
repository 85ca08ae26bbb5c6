"""torch.func transforms (grad, vjp, jvp, jacrev, jacfwd, vmap), alone and under torch.compile:
the bugs the transforms have on their own, each entry beside its predicates. Those only
torch.compile of a transform has (the func+dynamo paths alone) are in func_dynamo.py; ENTRIES
here joins them in, in the registry's order."""

from __future__ import annotations

import dataclasses
import re

from harness.dataflow import (
    VERSION_ERROR,
    Dataflow,
    base_ref,
    chosen_leaves,
    differentiable,
    loss_refs,
    reads,
    saved_mutated_outputs,
    version_error_expected,
)
from harness.known_issues import func_dynamo
from harness.known_issues.entry import KnownIssue, damaged_without_error, error_at, raised
from harness.known_issues.shared import (
    _aliasing_output_as_copy,
    _backward_runs,
    _eager_backward_runs,
    _functions_replaced,
    _gradient_reaches,
    _ref_of,
    _returned_as_tuples,
    _vjp_as_backward,
    _vjp_backward_runs,
    _without_errors,
)
from harness.oracles.compare import Mismatch
from harness.run import GRADIENT_ROLES, RunResult
from harness.spec import FunctionSpec, GraphSpec

# --- torch.func ------------------------------------------------------------------------------


def _tensor_hooked_values(spec: GraphSpec) -> set[str]:
    """Values with a tensor hook (register_hook) that require grad: the hooks a gradient
    transform registers (harness/paths/func.py GraphFunction.hooked)."""
    requires_grad = Dataflow(spec).requires_grad
    return {h.target for h in spec.hooks if h.kind == "tensor" and requires_grad.get(h.target, False)}


def _single_constant_outputs_vmapped(spec: GraphSpec) -> set[int]:
    """Functions with generate_vmap_rule whose forward returns one non-tensor value, not a
    tuple: vmapify_autograd_function's forward ends with `return *outputs, out_dims`. A list
    (OutputSpec.listed: `return [z]`) is one too, and is splatted as well."""
    return {n for n, fn in enumerate(spec.functions)
            if fn.vmap and not fn.tuple_output and (fn.outputs[0].kind == "const" or fn.outputs[0].listed)}


_vmap_unpack_error = raised("forward", r"Value after \* must be an iterable", TypeError)
#: a one-element list splatted: its tensor is taken for the output and the out_dims for a second
#: one, and vmap's unwrapping of the outputs finds no batch dims for them
_vmap_list_unpacked_error = raised("forward", r"flat_bdims must not be None", AssertionError)


def _constant_unpacked_by_vmap(spec: GraphSpec, result: RunResult, mismatches: list[Mismatch]) -> bool:
    """`return *outputs, out_dims` unpacked such a value: a number, bool or None raises "Value
    after * must be an iterable"; a string of two or more characters unpacks into them, and the
    caller reads the first as the output (the rest as out_dims): 'tag' comes back as 't'."""
    if _vmap_unpack_error(spec, result, mismatches) or _vmap_list_unpacked_error(spec, result, mismatches):
        return True
    return any(m in _unpacked_strings(spec) for m in ((m.role, m.detail) for m in mismatches
                                                         if m.checkpoint == "forward"))


def _unpacked_strings(spec: GraphSpec) -> set[tuple[str, str]]:
    """(role, mismatch detail) of each single string output as vmap returns it: its first character."""
    strings = ((n, spec.functions[n].outputs[0].value) for n in _single_constant_outputs_vmapped(spec))
    return {(f"const:f{n}.0", f"expected {value!r}, got {value[0]!r}") for n, value in strings
            if isinstance(value, str) and len(value) > 1}


def _batched_under_vmap(spec: GraphSpec) -> dict[str, bool]:
    """Which values are BatchedTensors inside the graph under vmap: every leaf but those the batch
    shares (harness/paths/func.py _sample_leaves, GraphSpec.batch_shared), and what is computed
    from one. A Function whose vmap rule is the harness's own (a user vmap staticmethod,
    harness/build.py with_user_vmap; a custom_op's register_vmap, harness/custom_op.py) runs the
    whole batch, unbatched inputs expanded to it, and returns every tensor output batched, once
    any input is batched (torch calls no rule for a call with none: autograd_function.py,
    custom_function_call_vmap)."""
    batched = {ref: int(base_ref(ref)[1:]) not in spec.batch_shared
               for ref in spec.value_refs() if ref.startswith("x")}
    for n, fn in enumerate(spec.functions):
        whole_batch = fn.vmap and (fn.vmap_rule == "user" or fn.api == "custom_op")
        any_batched = any(batched[a.ref] for a in fn.args if a.ref is not None)
        for k, o in enumerate(fn.outputs):
            if whole_batch and o.kind != "const":
                batched[f"f{n}.{k}"] = any_batched
            elif o.kind == "compute":
                read = [fn.args[t.slot].ref for t in o.terms] + ([fn.args[o.mask].ref] if o.mask >= 0 else [])
                batched[f"f{n}.{k}"] = any(batched[r] for r in read)
            elif o.kind != "const":
                batched[f"f{n}.{k}"] = batched[fn.args[o.slot].ref]
    return batched


def _saving_output_and_for_forward(spec: GraphSpec) -> set[int]:
    """Functions with generate_vmap_rule and a jvp, whose backward runs under grad(vmap) (as in
    eager, or because func-grad-vmap-mark-non-differentiable-lost made it run), where what they
    save for backward and for forward (harness/generic.py _setup) is batched differently: the
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

    flow = Dataflow(spec)
    rg = _requires_grad_under_grad_vmap(spec)
    in_loss = set(loss_refs(spec))  # eager's loss, the transform's too
    readers: dict[str, set[int]] = {}
    for m, fn in enumerate(spec.functions):
        for a in fn.args:
            if a.is_tensor_input:  # (a tensor passed in a list has no gradient edge)
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
    harmless = _without_errors(lambda n, fn: n in lost)(spec)
    if not _marks_lost_by_vmap(harmless):
        return harmless
    # where that still leaves marks to lose, the vmapped Functions' outputs are not marked either (a
    # workaround must avoid the structure the bug needs: tests/test_known_issues.py)
    return _functions_replaced(harmless, lambda n, fn: dataclasses.replace(fn, outputs=tuple(
        dataclasses.replace(o, non_differentiable=False) for o in fn.outputs)) if fn.vmap else fn)


def _requires_grad_under_grad_vmap(spec: GraphSpec) -> dict[str, bool]:
    """requires_grad of every value inside grad(vmap), at grad's level: computed from a leaf the
    transform differentiates (harness/paths/func.py chosen_leaves); a vmapped Function's outputs
    marked non-differentiable too where they have a batch dim, since those marks are lost (the
    outputs are re-wrapped before setup_context: func-grad-vmap-mark-non-differentiable-lost)."""

    rg = Dataflow(spec).requires_grad_from(set(chosen_leaves(spec)))
    batched = _batched_under_vmap(spec)
    for n, fn in enumerate(spec.functions):
        # (torch.func.grad respects a no_grad block inside the function: FunctionSpec.grad_mode)
        from_inputs = fn.grad_mode != "no_grad" and any(rg[a.ref] for a in fn.args if a.is_tensor_input)
        for k in fn.tensor_outputs:
            ref = f"f{n}.{k}"
            out = fn.outputs[k]
            rg[ref] = from_inputs and (out.differentiable or out.non_differentiable and fn.vmap and batched[ref])
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
                 if fn.vmap and any(rg[a.ref] for a in fn.args if a.is_tensor_input)
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
    from a saved input that requires grad (harness/generic.py _backward: an intermediate is saved
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
            for s, a in enumerate(fn.args) if a.is_tensor_input)
        if unbatched_varying and batched_result:
            found.add(n)
    return found


def _shared_gradient_counted_per_sample(spec: GraphSpec) -> frozenset[str]:
    """The values given, unbatched, to a Function with generate_vmap_rule whose backward runs under
    grad(vmap), where that argument's gradient comes both from an output with a batch dim and
    from one without (an output read only from unbatched values: GraphSpec.batch_shared). The
    unbatched output's gradient arrives as the batch's total, the vmapped backward adds it to every
    sample's batched gradient, and reductify sums the samples: that share is counted batch-size
    times."""
    if not _eager_backward_runs(spec):
        return frozenset()
    flow = Dataflow(spec)
    batched = _batched_under_vmap(spec)
    rg = _requires_grad_under_grad_vmap(spec)
    lost = _marks_lost_by_vmap(spec)
    found = set()
    for n, fn in enumerate(spec.functions):
        if not (fn.vmap and fn.vmap_rule == "generate" and fn.api == "function"
                and (flow.backward_runs(n) or n in lost)):
            continue
        for s, a in enumerate(fn.args):
            if a.ref is None or batched[a.ref] or not rg[a.ref]:
                continue
            sends = {batched[f"f{n}.{k}"] for k, o in enumerate(fn.outputs)
                     if differentiable(fn, k) and rg.get(f"f{n}.{k}", False) and reads(o.kind, o, s)}
            if sends == {True, False}:
                found.add(a.ref)
    return frozenset(found)


def _gradient_of_a_leaf_behind(spec: GraphSpec, m: Mismatch) -> bool:
    """A gradient (first or second order, or its stride) of a value whose gradient comes through
    those values, or of its leaf."""
    values = _shared_gradient_counted_per_sample(spec)
    behind = frozenset().union(*(Dataflow(spec).upstream(r) for r in values))
    role = m.role.removeprefix("stride:")
    return m.checkpoint in ("backward", "meta:backward", "double_backward") and role.startswith(GRADIENT_ROLES) \
        and _ref_of(role) in behind


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
    return any(fn.vmap and fn.error in _REDUCTIFY_FAILS_ON and (_backward_runs(spec, n) or n in lost)
               for n, fn in enumerate(spec.functions))


#: the invalid gradients reductify meets before autograd's check: a wrong shape ("is not expandable
#: to size", from sum_to_size), and a gradient for a non-tensor input, whose in_dim is not an int
#: ("unsqueeze(): argument 'dim' ... must be int, not tuple": a 10-minute func campaign's 3e0d5b73)
_REDUCTIFY_FAILS_ON = ("grad_shape", "grad_for_nontensor")


def _tangentless_custom_ops(spec: GraphSpec) -> dict[int, set[str]]:
    """custom_op Functions whose contribution func.jacfwd drops, with the leaves whose gradients
    lose it: the op gets no tangent under forward mode (its Autograd kernel, torch/_library/autograd.py
    make_autograd_impl, redispatches below autograd when no input requires grad, and a dual tensor
    does not), so jacfwd's Jacobian has zeros where the op's outputs depend on a differentiated
    leaf. Only where eager runs a backward: otherwise jacfwd runs its forward under vjp
    (harness/paths/func.py), where a custom_op is unsupported."""
    if not _eager_backward_runs(spec):
        return {}
    rg = Dataflow(spec).requires_grad_from(set(chosen_leaves(spec)))
    found: dict[int, set[str]] = {}
    for n, fn in enumerate(spec.functions):
        if fn.api != "custom_op":
            continue
        leaves = set().union(*(_gradient_reaches(spec, rg, f"f{n}.{k}") for k in fn.tensor_outputs))
        if leaves:
            found[n] = leaves
    return found


def _custom_op_contribution_lost(spec: GraphSpec, m: Mismatch) -> bool:
    """The gradient of a leaf that one of those ops' outputs depend on."""
    leaves = set().union(*_tangentless_custom_ops(spec).values())
    return m.checkpoint == "backward" and m.role.startswith(("grad:", "agrad:")) and _ref_of(m.role) in leaves


def _custom_ops_as_functions_with_jvp(spec: GraphSpec) -> GraphSpec:
    """Those ops written as autograd.Functions with the jvp and vmap rule torch.func.jacfwd needs."""
    found = _tangentless_custom_ops(spec)
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, api="function", jvp=True, vmap=True)
                               if n in found else fn)


#: the func paths that differentiate by reverse mode (harness/paths/func.py, reverse_mode): jacfwd
#: too where eager runs no backward, since its forward then runs under torch.func.vjp
_REVERSE_MODE = tuple(f"func.{t}{d}" for d in ("", "+dynamo") for t in ("grad", "vjp", "jacrev", "vmap_grad",
                                                                          "grad_vmap", "jacfwd"))


def _has_custom_op(spec: GraphSpec) -> bool:
    return any(fn.api == "custom_op" for fn in spec.functions)


def _custom_ops_as_functions(spec: GraphSpec) -> GraphSpec:
    """The custom_ops written as autograd.Functions with setup_context (what the op's
    register_autograd formula is) and the vmap rule the batched transforms need."""
    return _functions_replaced(spec, lambda n, fn: dataclasses.replace(fn, api="function", vmap=True)
                               if fn.api == "custom_op" else fn)


def _unchanged(spec: GraphSpec) -> GraphSpec:
    """No smaller spec avoids the bug on this path (the path reports it as known)."""
    return spec


ENTRIES: tuple[KnownIssue, ...] = (
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
        upstream=(
            "documented limitation: torch.func needs a backward staticmethod for reverse-mode AD (notes/extending.func), though its error says 'implement either the backward or vjp method'",
        ),
        related=("pytorch/pytorch#191498 (the compiled-autograd sibling, an open draft pull request)",),
        kind="limitation",
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
               "A string is iterable: it is unpacked into its characters and comes back as its first one, silently; "
               "a one-element list of a tensor (`return [z]`) is unpacked too, and vmap raises \"AssertionError: "
               "flat_bdims must not be None\""),
        first=(2, 13, 0), last=None,
        # every path that vmaps the forward with the generated rule (jacfwd vmaps its jvp, so its
        # forward); under torch.compile when Dynamo falls back to eager torch.func
        paths=tuple(f"func.{t}{c}" for t in ("vmap", "vmap_grad", "grad_vmap", "jacfwd") for c in ("", "+dynamo")),
        reproducer="func_vmap_single_constant_output.py",
        upstream=(),
        related=(),
        kind="crash",
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
        upstream=(),
        related=(),
        kind="crash",
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
        upstream=(),
        related=(),
        kind="crash",
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
        upstream=(),
        related=(),
        kind="silent wrong result",
        trigger=lambda spec: bool(_marks_lost_by_vmap(spec)),
        witness=_vmapped_backward_of_lost_marks_raised,
        damage=error_at("backward"),
        damages=("the error at backward: a backward eager never calls runs and raises (its deliberate invalid "
                 "results, or torch's version-counter error for a saved output modified after the forward); "
                 "the forward is still compared"),
        workaround=_marks_lost_by_vmap_harmless,
    ),
    KnownIssue(
        id="func-grad-vmap-shared-input-gradient-counted-per-sample",
        title=("torch.func.grad over vmap of a custom Function with generate_vmap_rule=True given an input shared "
               "by the batch (in_dims=None) that two outputs read, one batched and one not (read only from "
               "shared inputs): the vmapped backward gets the unbatched output's gradient as the batch's total, "
               "adds it to each sample's gradient of the shared input, and reductify "
               "(torch/_functorch/autograd_function.py) then sums the samples, so that share is counted "
               "batch-size times, silently (x * m + x * 2 over m = [1, 2, 3]: 24, not 12); the same ops without "
               "a Function, and eager per sample, give 12"),
        first=(2, 13, 0), last=None,
        paths=("func.grad_vmap", "func.grad_vmap+dynamo"),
        reproducer="func_grad_vmap_shared_input_gradient_counted_per_sample.py",
        upstream=(),
        related=(),
        kind="silent wrong result",
        trigger=lambda spec: bool(_shared_gradient_counted_per_sample(spec)),
        witness=damaged_without_error(_gradient_of_a_leaf_behind),
        damage=_gradient_of_a_leaf_behind,
        damages=("the gradients, first and second order (and their strides), of the values and leaves whose "
                 "gradient comes through such a shared input"),
        workaround=lambda spec: dataclasses.replace(spec, batch_shared=()),
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
        upstream=(),
        related=(
            "pytorch/pytorch#90225 (closed: ctx.mark_dirty with functorch; the generate_vmap_rule case still raises)",
        ),
        kind="crash",
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
        upstream=(),
        related=(),
        kind="crash",
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
        upstream=(),
        related=("pytorch/functorch#638 (open: backward hooks are not called under vmap)",),
        kind="silent wrong result",
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
               "\"Function ... returned an invalid gradient at index 0\" (eager, grad, vmap(grad)); a gradient for a "
               "non-tensor input raises reductify's TypeError \"unsqueeze(): argument 'dim' must be int, not tuple\" "
               "instead of \"returned a gradient different than None\"; an error-message divergence, no value is "
               "affected"),
        first=(2, 13, 0), last=None,
        paths=("func.grad_vmap", "func.grad_vmap+dynamo"),  # +dynamo: after a graph break, eager torch.func
        reproducer="func_grad_vmap_wrong_shape_gradient.py",
        upstream=(),
        related=(),
        kind="missing error",
        trigger=_wrong_shape_gradient_vmapped,
        witness=raised("backward", r"is not expandable to size|unsqueeze\(\): argument 'dim' \(position 1\) must be int"),
        damage=error_at("backward"),
        damages="the error at backward (its message; the forward is still compared)",
        workaround=_without_errors(lambda n, fn: fn.vmap and fn.error in _REDUCTIFY_FAILS_ON),
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
        upstream=(),
        related=("pytorch/pytorch#97237 (the closed pull request that added this error)",),
        kind="crash",
        trigger=lambda spec: bool(_once_differentiable_given_an_unbatched_gradient_that_requires_grad(spec)),
        witness=raised("backward", r"accessing `data` under vmap transform is not allowed", RuntimeError),
        damage=error_at("backward"),
        damages="the error at backward (the gradients; the forward is still compared)",
        workaround=_differentiable_twice_where_once_meets_batching,
    ),
    # torch.compile of a transform (func_dynamo.py): func-dynamo-custom-rules-dropped to
    # func-jvp-zero-dim-scalar-tangent-dtype here, the rest after the custom_op entries
    *func_dynamo.ENTRIES[:4],
    KnownIssue(
        id="func-custom-op-forward-ad-zero-tangent",
        title=("torch.func.jvp and jacfwd of a torch.library.custom_op (register_autograd gives it a backward, no "
               "forward-mode formula) return an all-zero tangent with no error, where eager forward AD raises "
               "NotImplementedError: the op's Autograd kernel (torch/_library/autograd.py, make_autograd_impl) "
               "redispatches below autograd when no input requires grad, which a dual tensor does not, so the "
               "output has no tangent and jvp fills in zeros; jacfwd's gradients miss the op's part"),
        first=(2, 13, 0), last=None,
        # func.jvp observes tangents only where spec.forward_ad, which a custom_op never has (no jvp);
        # +dynamo: Dynamo keeps the op opaque and the compiled transform runs it the same way
        paths=("func.jacfwd", "func.jacfwd+dynamo"),
        reproducer="func_custom_op_forward_ad_zero_tangent.py",
        upstream=(),
        kind="silent wrong result",
        trigger=lambda spec: bool(_tangentless_custom_ops(spec)),
        witness=damaged_without_error(_custom_op_contribution_lost),
        damage=_custom_op_contribution_lost,
        damages="gradients (backward grad:*/agrad:*) of the leaves a custom_op's outputs depend on",
        workaround=_custom_ops_as_functions_with_jvp,
    ),
    KnownIssue(
        id="func-custom-op-register-autograd-refused",
        title=("torch.func.grad, vjp and jacrev (and vmap of them) of a torch.library.custom_op with "
               "register_autograd raise \"In order to use an autograd.Function with functorch transforms ... it "
               "must override the setup_context staticmethod\", where eager autograd runs the registered "
               "backward: the op's formula runs in a Function that make_autograd_impl (torch/_library/autograd.py) "
               "generates with forward(ctx, *args) and no setup_context (the user's setup_context is called from "
               "that forward), which Function.apply refuses under a transform; not documented as a limit "
               "(register_autograd's docs say nothing of torch.func)"),
        first=(2, 13, 0), last=None,
        paths=_REVERSE_MODE,
        reproducer="func_custom_op_register_autograd_refused.py",
        upstream=("pytorch/pytorch#170834 (open; fix pull requests #171305 and #184974 closed, #191995 open)",
                  "pytorch/pytorch#168393 (open: the docs' own register_autograd example under torch.func)",
                  "pytorch/pytorch#179652 (open: jacrev)"),
        kind="crash",
        trigger=_has_custom_op,
        path_triggers={path: lambda spec: _has_custom_op(spec) and not _eager_backward_runs(spec)
                       for path in ("func.jacfwd", "func.jacfwd+dynamo")},
        witness=raised("forward", r"must override the setup_context staticmethod", RuntimeError),
        damage=error_at("forward"),
        damages="the error at forward (every output and gradient is lost with it)",
        workaround=_custom_ops_as_functions,
    ),
    *func_dynamo.ENTRIES[4:],
)
