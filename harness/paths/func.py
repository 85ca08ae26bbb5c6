"""`func.*`: the graph's Functions run under `torch.func` transforms, compared with eager autograd.

The whole graph forward (every Function applied with its own `apply`, as eager does) is one
function of the leaf values; a transform of it gives the observations eager makes, under
eager's role names, so the usual oracles judge them (math oracle and eager, per-tensor
bounds of `harness.oracles.bounds`):

  func.grad      torch.func.grad_and_value of eager's loss (the same weighted sum of the
                 outputs that require grad), w.r.t. the leaves that require grad; under
                 `backward="double"` grad of grad gives the second-order roles too
  func.vjp       torch.func.vjp of the outputs, pulled back with eager's loss weights
  func.jvp       torch.func.jvp with eager's leaf tangents (each Function's own jvp)
  func.vmap      torch.func.vmap over a batch of BATCH samples; the Functions' vmap rule
                 is the one their spec asks for (generate_vmap_rule)
  func.vmap.user the same with a user `vmap` staticmethod added to every Function
                 (`with_user_vmap`: the Function run on the whole batch)
  func.vmap_grad vmap(grad): per-sample gradients
  func.grad_vmap grad(vmap): gradient of the batch's summed loss, i.e. per-sample gradients
  func.jacrev    torch.func.jacrev of the outputs, contracted with the loss weights
  func.jacfwd    torch.func.jacfwd of the outputs, contracted with the leaf tangents

and each again inside torch.compile as `<name>+dynamo` (backend aot_eager, fullgraph first;
a documented graph break reruns with Dynamo's eager fallback, as the `dynamo` path does).

Batched paths check the sample at batch index CHECKED_SAMPLE, whose leaves are eager's; the
other samples have leaves of their own, so a batching rule that mixes or drops samples
changes the checked one. A leaf the spec shares across the batch (GraphSpec.batch_shared) is
passed unbatched (in_dims=None), eager's own value. A path observes only part of what eager
records (no hooks, no `.grad` accumulation, no lifetimes, no tensor metadata: a transform
returns fresh tensors): `observed` narrows the reference results to exactly the roles the path
computes, derived from the spec, so a role the path fails to produce is still reported.

Documented limits (docs/func.md cites each) are `unsupported` before running (LIMITS).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Sequence

import torch

from harness.build import BuiltGraph, UserVmapRuleLimit, with_user_vmap
from harness.generic import GeneratedFunction
from harness.dataflow import Dataflow, chosen_leaves, function_output_refs_of, has_backward, loss_refs
from harness.paths import register
from harness.paths.tracing import TraceRecorder
from harness.plain import graph_forward, graph_forward_source
from harness.run import (CHECKPOINTS, RunResult, forward, function_output_refs, leaf_values,
                         named_outputs, weighted_sum)
from harness.spec import COMPLEX_DTYPES, GraphSpec

#: samples in a vmapped batch, and the one compared with eager (eager's own leaves)
BATCH = 3
CHECKED_SAMPLE = 1
#: generator offsets of the other samples' leaves
_OTHER_SAMPLES = (7_919, 104_729)

# --- documented limits -------------------------------------------------------------------

#: torch/autograd/function.py, Function.apply: "In order to use an autograd.Function with
#: functorch transforms (vmap, grad, jvp, jacrev, ...), it must override the setup_context
#: staticmethod."
OLD_STYLE = "old-style forward(ctx, ...): torch.func needs setup_context"
#: torch/_functorch/autograd_function.py, custom_function_call_vmap: "You tried to vmap over
#: F, but it does not have vmap support. Please override and implement the vmap staticmethod
#: or set generate_vmap_rule=True."
NO_VMAP_RULE = "vmap: a Function without generate_vmap_rule or a vmap staticmethod"
#: torch/autograd/function.py, _SingleLevelFunction.jvp: "You must implement the jvp function
#: for custom autograd.Function to use it with forward mode AD."
NO_JVP = "forward AD: a Function without jvp"
#: torch/_functorch/eager_transforms.py, vjp/jvp/grad: "Expected f to be a function that has
#: non-empty output"
NO_TENSOR_OUTPUT = "no tensor output: torch.func differentiates a function with tensor outputs"
#: docs/source/func.ux_limitations.rst, "Data-dependent Python control flow": "We don't yet
#: support vmap over data-dependent control flow" (vmap raises "It looks like you're attempting
#: to use a Tensor in some data-dependent control flow"); a user vmap rule runs the forward
#: outside vmap, on plain tensors
DATA_BRANCH = "vmap: data-dependent Python control flow in a forward the generated rule vmaps"
#: torch/_functorch/eager_transforms.py, error_if_complex ("jacrev and jacfwd don't support
#: complex functions"): "jacfwd: Expected all inputs to be real but received complex tensor"
COMPLEX_JACOBIAN = "jacrev / jacfwd: torch.func builds no Jacobian of a complex function"
#: The spec's tensor hook doubles a gradient (harness/run.py); the graph function registers it
#: inside the transform (GraphFunction.outputs), where grad, vjp, jacrev and vmap(grad) run it.
#: Two transforms cannot: Tensor.register_hook "Registers a backward hook" (torch/_tensor.py),
#: and jacfwd computes by forward-mode AD (torch/_functorch/eager_transforms.py, jacfwd: "using
#: forward-mode autodiff"), which runs no backward; and inside grad(vmap) a vmapped tensor does
#: not require grad, so no hook can be registered on it ("cannot register a hook on a tensor
#: that doesn't require gradient"; pytorch/pytorch#158610 "vmap will always disable gradient
#: calculation", pytorch/functorch#638 "backward hooks aren't called when using vmap", open).
#: A custom_op is no limitation here: torch.func's reverse-mode transforms refuse its register_autograd
#: formula (a generated Function without setup_context), which torch does not document and its tracker
#: calls a bug (known issue func-custom-op-register-autograd-refused); torch.func.jvp does not refuse a
#: custom_op, but gives it a zero tangent (known issue func-custom-op-forward-ad-zero-tangent)
TENSOR_HOOK_FORWARD_MODE = "tensor hook: a backward hook, which jacfwd's forward-mode AD never runs"
TENSOR_HOOK_UNDER_VMAP = "tensor hook: inside grad(vmap) no tensor requires grad, so none can be hooked"


@dataclasses.dataclass(frozen=True)
class Transform:
    """One way of computing eager's observations with torch.func."""

    name: str
    #: "grad" (backward-side roles), "tangent" (forward-AD roles) or "" (outputs only)
    derivative: str
    #: runs over a batch (needs a vmap rule)
    batched: bool = False
    #: the Functions get a user vmap staticmethod instead of their spec's generate_vmap_rule
    user_vmap: bool = False
    #: second-order roles under backward="double" (grad of grad)
    double: bool = False
    #: forward-mode inside (needs each Function's jvp)
    forward_mode: bool = False


# --- what a path observes ------------------------------------------------------------------


def gradient_roles(spec: GraphSpec, transform: Transform) -> list[tuple[str, str]]:
    """(checkpoint, role) of the gradients a backward-side transform computes, as eager names them."""
    if transform.derivative != "grad" or not has_backward(spec):
        return []
    prefix = "grad" if spec.backward in ("backward", "retain") else "agrad"
    roles = [("backward", f"{prefix}:x{i}") for i in chosen_leaves(spec)]
    if spec.backward == "double" and transform.double:
        roles += [("double_backward", f"dgrad:x{i}") for i in chosen_leaves(spec)]
    return roles


def tangent_roles(spec: GraphSpec, transform: Transform) -> list[tuple[str, str]]:
    if transform.derivative != "tangent" or not spec.forward_ad:
        return []
    return [("forward_ad", f"tangent:{r}") for r in function_output_refs_of(spec)]


def observed_roles(spec: GraphSpec, transform: Transform) -> set[tuple[str, str]]:
    """Every (checkpoint, role) the path records: the outputs (tensors and constants) and its
    derivative roles."""
    outputs = [("forward", f"out:{r}") for r in function_output_refs_of(spec)]
    consts = [("forward", f"const:f{n}.{k}") for n, fn in enumerate(spec.functions)
              for k, o in enumerate(fn.outputs) if o.kind == "const"]
    return set(outputs + consts + gradient_roles(spec, transform) + tangent_roles(spec, transform))


def runs_phase(transform: Transform, checkpoint: str) -> bool:
    """Does the transform run eager's phase `checkpoint` (where eager's errors are raised)?
    Gradients by a backward, except jacfwd's (forward mode); forward AD in jvp and jacfwd."""
    if checkpoint in ("backward", "double_backward"):
        return transform.derivative == "grad" and not transform.forward_mode
    if checkpoint == "forward_ad":
        return transform.forward_mode
    return True


def raises_as_eager(spec: GraphSpec, transform: Transform, reference: RunResult) -> bool:
    """Must the transform raise the error eager raised (`reference`)? Not where it does not run
    eager's phase, and not for a deliberate gradient of the wrong shape for an input the
    transform does not differentiate: torch checks a Function's gradients against its inputs'
    edges, and skips an input without one (torch/csrc/autograd/engine.cpp, validate_outputs:
    `if (!edge.is_valid()) continue`). Eager's leaves outside a partial backward's `grad_leaves`
    still require grad, so eager checks them; under the transform they are constants. Past such
    a skipped gradient the transform's backward goes on, so it still raises where another
    Function whose backward runs has a deliberate error the transform checks (eager stopped at
    the first one and never reached it)."""
    if not runs_phase(transform, reference.error_checkpoint):
        return False
    wrong_shape = re.match(r"^[Ff]unction F(\d+)Backward returned an invalid gradient at index \d+ - got .* "
                           r"but expected shape compatible", str(reference.error))
    if wrong_shape is None or int(wrong_shape[1]) >= len(spec.functions):
        return True
    skipped = int(wrong_shape[1])
    if spec.functions[skipped].error != "grad_shape":
        return True
    flow = Dataflow(spec)
    differentiated = flow.requires_grad_from(set(chosen_leaves(spec)))

    def checked(n: int) -> bool:
        """Function n's deliberate error is raised under the transform when its backward runs."""
        fn = spec.functions[n]
        return fn.error is not None and (fn.error != "grad_shape" or differentiated[fn.args[fn.float_slots[0]].ref])
    # the slot generic._break gives the wrong shape is the first float one
    return checked(skipped) or any(n != skipped and checked(n) and flow.backward_runs(n)
                                   for n in range(len(spec.functions)))


def unreached(spec: GraphSpec, transform: Transform, reference: RunResult) -> set[tuple[str, str]]:
    """The roles the path observes that `reference` never computed: it raised an error the
    transform does not (`raises_as_eager`: eager's backward error, the spec's deliberate one or
    torch's version-counter error, under jvp or jacfwd), so its later checkpoints never ran
    (eager runs forward AD last). The math oracle, which never raises there, judges them alone."""
    if reference.status != "error" or raises_as_eager(spec, transform, reference):
        return set()
    stopped = CHECKPOINTS.index(reference.error_checkpoint)
    return {(c, r) for c, r in observed_roles(spec, transform) if CHECKPOINTS.index(c) >= stopped}


def narrowed(spec: GraphSpec, transform: Transform, reference: RunResult) -> RunResult:
    """The part of a reference run (eager's or the math oracle's) that the path observes, as
    it observes it: a gradient or tangent eager leaves None is a zero tensor under torch.func
    (torch/_functorch/eager_transforms.py: `_autograd_grad` fills in `torch.zeros_like(inp)`
    for an input the outputs do not depend on, and jvp's `safe_unpack_dual` gives
    `torch.zeros_like(primal)` to an output without a tangent)."""
    keep = observed_roles(spec, transform)
    if reference.status == "error" and not raises_as_eager(spec, transform, reference):
        # eager raised an error this path does not (a backward error under jvp, jacfwd or vmap,
        # a wrong-shaped gradient for a leaf the transform holds constant): what ran before it
        # is the reference, and what it never reached is `unreached`
        reference = dataclasses.replace(reference, status="ok", error=None, error_checkpoint="")
    leaves = {f"x{i}": leaf for i, leaf in enumerate(spec.leaves)}
    tensors: dict[str, dict[str, torch.Tensor | None]] = {}
    for checkpoint, roles in reference.tensors.items():
        for role, t in roles.items():
            if (checkpoint, role) not in keep:
                continue
            if t is None and checkpoint in ("backward", "double_backward"):
                leaf = leaves[role.partition(":")[2]]
                t = torch.zeros(((leaf.views,) if leaf.views else ()) + tuple(spec.shape),
                                dtype=getattr(torch, spec.dtype))
            elif t is None and checkpoint == "forward_ad":
                t = torch.zeros(tuple(spec.shape), dtype=getattr(torch, spec.dtype))
            tensors.setdefault(checkpoint, {})[role] = t
    values: dict[str, dict[str, Any]] = {}
    for checkpoint, roles in reference.values.items():
        for role, v in roles.items():
            if (checkpoint, role) in keep:
                values.setdefault(checkpoint, {})[role] = v
    return dataclasses.replace(reference, tensors=tensors, values=values)


# --- the graph as a function of its leaves -------------------------------------------------


class GraphFunction:
    """The graph forward as a function of the leaves, for torch.func."""

    def __init__(self, built: BuiltGraph, functions: Sequence[type[GeneratedFunction]],
                 hooks: bool = False) -> None:
        self.built = built
        self.spec = built.spec
        self.functions = tuple(functions)
        self.refs = function_output_refs(built)
        self.consts: dict[str, Any] = {}
        #: the phase an error is raised in: forward until the graph forward returned
        self.phase = "forward"
        #: outputs the forward modifies in place (eager's forward AD runs a forward without
        #: them, run._forward_ad: func.jvp applies them to its outputs only, not its tangents)
        self.mutated = tuple(built.spec.mutated_outputs)
        #: with `hooks` (a gradient transform), the values the spec's tensor hooks double the
        #: gradient of: those that require grad in eager (run._install_hooks; from the spec, not
        #: from `requires_grad` inside the transform, which torch.compile reports False for a
        #: differentiated input, docs/func.md).
        # (and that the transform differentiates: a hook can only be registered on a value that
        # depends on the chosen leaves; eager's partial backward never calls the others)
        requires_grad = Dataflow(built.spec).requires_grad_from(set(chosen_leaves(built.spec)))
        self.hooked = tuple(h.target for h in built.spec.hooks if hooks and h.kind == "tensor"
                            and requires_grad[h.target])
        #: the straight-line forward (spec.forward_code), made here: made inside a compiled
        #: region, its exec() would break Dynamo's graph
        self.straight = (graph_forward(graph_forward_source(self.spec), self.functions)
                         if self.spec.forward_code == "straight" else None)

    def apply(self, n: int, cls: type[GeneratedFunction], args: Sequence[Any]) -> Any:
        # (the split from the spec: under func+dynamo Dynamo cannot read the class's attributes)
        positional, keywords = self.spec.functions[n].keyword_split(args)
        return self.functions[n].apply(*positional, **keywords)

    def outputs(self, leaves: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        if self.straight is None:
            values = forward(self.built, self.apply, leaves, self.consts)
        else:
            values = leaf_values(self.built, leaves)
            named_outputs(self.built, self.straight(*values.values()), values, self.consts)
        for ref in self.mutated:  # the user's in-place update after the forward, as run.py
            values[ref].mul_(2.0)
        for ref in self.hooked:  # as run.py registers them: after that update
            values[ref].register_hook(lambda g: None if g is None else g * 2)
        return tuple(values[r] for r in self.refs)


def _plain_leaves(built: BuiltGraph, offset: int = 0) -> list[torch.Tensor]:
    """Eager's leaf values (same seed and layout), outside autograd: torch.func differentiates
    what it is told to, whatever requires_grad says."""
    return [leaf.detach() for leaf in built.make_leaves(offset)]


def _sample_leaves(built: BuiltGraph) -> list[torch.Tensor]:
    """Leaves batched along a new dim, the first or the last (GraphSpec.batch_dim); sample
    CHECKED_SAMPLE holds eager's leaves. A leaf the spec shares across the batch
    (GraphSpec.batch_shared) is eager's leaf itself, unbatched."""
    samples = [_plain_leaves(built, o) for o in _OTHER_SAMPLES]
    samples.insert(CHECKED_SAMPLE, _plain_leaves(built))
    in_dim = built.spec.batch_dim
    return [samples[CHECKED_SAMPLE][i] if i in built.spec.batch_shared
            else torch.stack([s[i] for s in samples], dim=in_dim)
            for i in range(len(built.spec.leaves))]


def _in_dims(spec: GraphSpec) -> tuple[int | None, ...]:
    """vmap's in_dims over the leaves: None for a leaf shared across the batch."""
    return tuple(None if i in spec.batch_shared else spec.batch_dim for i in range(len(spec.leaves)))


def _replace(values: list, indices: Sequence[int], new: Sequence) -> list:
    out = list(values)
    for i, v in zip(indices, new):
        out[i] = v
    return out


def graph_function(built: BuiltGraph, transform: Transform) -> GraphFunction:
    # (a custom_op keeps its own rule, register_vmap: a vmap staticmethod is an autograd.Function's)
    functions = [cls if getattr(cls, "is_custom_op", False) else with_user_vmap(cls) for cls in built.functions] \
        if transform.user_vmap else list(built.functions)
    return GraphFunction(built, functions, hooks=bool(gradient_roles(built.spec, transform)))


def observe(graph: GraphFunction, transform: Transform, result: RunResult,
            compile_fn: Callable[[Callable], Callable] = lambda f: f) -> None:
    """Run `transform` on the graph and put its observations into `result`. Raises what
    torch or the Functions raise; `graph.phase` then says where."""
    import torch.func as tf

    built = graph.built
    spec = built.spec
    weights = built.weights(len(graph.refs))
    leaves = _sample_leaves(built) if transform.batched else _plain_leaves(built)
    in_dims = _in_dims(spec)
    observed = has_backward(spec)
    wrt = chosen_leaves(spec) if observed else list(range(len(leaves)))
    chosen = list(range(len(wrt))) if observed else []  # the chosen leaves' positions in wrt: all of it
    in_loss = set(loss_refs(spec))
    argnums = tuple(range(len(wrt)))

    def outputs(xs: Sequence[torch.Tensor], diff: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        return graph.outputs(_replace(list(xs), wrt, diff))

    def loss(outs: Sequence[torch.Tensor]) -> torch.Tensor:
        graph.phase = "backward"
        return sum(weighted_sum(o, w) for r, o, w in zip(graph.refs, outs, weights) if r in in_loss)

    def grad_of_loss(xs: Sequence[torch.Tensor]) -> Callable[..., tuple]:
        """diff leaves -> (gradients, outputs), by torch.func.grad."""
        def f(*diff: torch.Tensor) -> tuple[torch.Tensor, tuple]:
            outs = outputs(xs, diff)
            return loss(outs), outs
        return tf.grad(f, argnums=argnums, has_aux=True)

    def diff_of(xs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [xs[i] for i in wrt]

    name = transform.name
    grads: Sequence[torch.Tensor] = ()
    second: Sequence[torch.Tensor] = ()
    tangents: Sequence[torch.Tensor] = ()
    if transform.derivative == "grad" and not observed:
        # eager computes no gradient: the forward runs under torch.func.vjp (every float leaf
        # a primal, vmapped for the batched paths) and stops before the pullback, so only the
        # outputs are compared (a pullback would run backwards eager never runs)
        # (the float leaves: an int64 / bool leaf, a mask, cannot be a primal and stays a constant)
        float_leaves = [i for i, leaf in enumerate(spec.leaves) if leaf.dtype is None]

        def primal(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return tf.vjp(lambda *ys: graph.outputs(_replace(list(xs), float_leaves, ys)),
                          *(xs[i] for i in float_leaves))[0]
        outs = compile_fn(tf.vmap(primal, in_dims=in_dims) if transform.batched else primal)(*leaves)
    elif name in ("vmap", "vmap.user"):
        outs = compile_fn(tf.vmap(lambda *xs: graph.outputs(xs), in_dims=in_dims))(*leaves)
    elif name == "jvp":
        # the primals are the leaves with a tangent: an int64 / bool leaf (a mask) has none and
        # stays a constant of the function, as under eager's forward AD (run._forward_ad)
        all_tans = built.leaf_tangents(leaves)
        primal_idx = [i for i, t in enumerate(all_tans) if t is not None]
        tans = tuple(all_tans[i] for i in primal_idx)
        graph.mutated = ()

        def with_primals(xs: Sequence[torch.Tensor]) -> Callable[..., tuple]:
            return lambda *ys: graph.outputs(_replace(list(xs), primal_idx, ys))
        outs, tangents = compile_fn(lambda *xs: tf.jvp(with_primals(xs), tuple(xs[i] for i in primal_idx), tans))(
            *leaves)
        outs = tuple(o * 2.0 if r in spec.mutated_outputs else o for r, o in zip(graph.refs, outs))
    elif name == "grad" and spec.backward == "double" and observed:
        w2 = built.weights(len(chosen), offset=2_000_003)  # eager's second-order loss (run._backward)

        def first_order(*diff: torch.Tensor) -> tuple[torch.Tensor, tuple]:
            g, outs = grad_of_loss(leaves)(*diff)
            return sum(weighted_sum(g[k], wi) for k, wi in zip(chosen, w2)), (g, outs)

        second, (grads, outs) = compile_fn(tf.grad(first_order, argnums=argnums, has_aux=True))(
            *diff_of(leaves))
    elif name == "grad":
        grads, outs = compile_fn(grad_of_loss(leaves))(*diff_of(leaves))
    elif name == "vjp":
        def pulled_back(*diff: torch.Tensor) -> tuple[tuple, tuple]:
            outs, vjp_fn = tf.vjp(lambda *d: outputs(leaves, d), *diff)
            graph.phase = "backward"
            # eager's loss Re(sum(o * w)) sends conj(w) to each output (run.weighted_sum):
            # the same cotangent here (conj is a no-op for real weights)
            cotangents = tuple(w.conj() if r in in_loss else torch.zeros_like(o)
                               for r, w, o in zip(graph.refs, weights, outs))
            return vjp_fn(cotangents), outs
        grads, outs = compile_fn(pulled_back)(*diff_of(leaves))
    elif name in ("jacrev", "jacfwd"):
        jacobian_of = tf.jacrev if name == "jacrev" else tf.jacfwd
        kept = [k for k, r in enumerate(graph.refs) if r in in_loss]

        def f(*diff: torch.Tensor) -> tuple[tuple, tuple]:
            outs = outputs(leaves, diff)
            graph.phase = "backward"
            return tuple(outs[k] for k in kept), outs

        blocks, outs = compile_fn(jacobian_of(f, argnums=argnums, has_aux=True))(*diff_of(leaves))
        # the loss's gradient: each Jacobian block weighted by its output's loss weight
        grads = [sum(_weighted(blocks[j][i], weights[k], len(spec.shape)) for j, k in enumerate(kept))
                 for i in range(len(wrt))]
    elif name == "vmap_grad":
        grads, outs = compile_fn(tf.vmap(lambda *xs: grad_of_loss(xs)(*diff_of(xs)), in_dims=in_dims))(*leaves)
    elif name == "grad_vmap":
        # A leaf shared across the batch gets the gradient of every sample's loss (the generated
        # vmap rule sums them: reductify), so where one is differentiated the loss is the checked
        # sample's alone: then its gradient is eager's, and the rule still reduces the batch.
        shared_differentiated = bool(set(spec.batch_shared) & set(wrt))

        def batch_loss(*diff: torch.Tensor) -> tuple[torch.Tensor, tuple]:
            def one(*xs: torch.Tensor) -> tuple[torch.Tensor, tuple]:
                outs = graph.outputs(xs)
                return loss(outs), outs
            per_sample, outs = tf.vmap(one, in_dims=in_dims)(*_replace(list(leaves), wrt, diff))
            return per_sample[CHECKED_SAMPLE] if shared_differentiated else per_sample.sum(), outs
        grads, outs = compile_fn(tf.grad(batch_loss, argnums=argnums, has_aux=True))(*diff_of(leaves))
    else:
        raise AssertionError(f"unknown transform {name!r}")
    graph.phase = "done"
    # vmap's results have their batch dimension first (out_dims 0); grad(vmap)'s gradients are the
    # batched leaves', where in_dims put it
    sample = (lambda t: t[CHECKED_SAMPLE]) if transform.batched else (lambda t: t)
    sample_of_grad = (lambda t: t.select(spec.batch_dim, CHECKED_SAMPLE)) if name == "grad_vmap" else sample
    for ref, o in zip(graph.refs, outs):
        result.put("forward", f"out:{ref}", sample(o))
    for ref, value in graph.consts.items():
        result.put("forward", f"const:{ref}", value)
    roles = gradient_roles(spec, transform)
    if roles:
        # grad(vmap)'s gradient of a leaf shared across the batch is one value, not a batch
        unbatched = {k for k in chosen if name == "grad_vmap" and wrt[k] in spec.batch_shared}
        picked = [(grads[k], k in unbatched) for k in chosen] + (
            [(second[k], False) for k in chosen] if second else [])
        for (checkpoint, role), (g, one) in zip(roles, picked):
            result.put(checkpoint, role, g if one else sample_of_grad(g))
    for (checkpoint, role), t in zip(tangent_roles(spec, transform), tangents):
        result.put(checkpoint, role, t)


def _weighted(block: torch.Tensor, weight: torch.Tensor, out_dims: int) -> torch.Tensor:
    """sum over the output elements of weight * d output / d input (a vjp from a Jacobian)."""
    w = weight.reshape(weight.shape + (1,) * (block.dim() - out_dims))
    # sum(dim=()) would reduce every dim: a 0-dim output has no dims to sum over
    return (w * block).sum(dim=tuple(range(out_dims))) if out_dims else w * block


def _record_plain_forward(built: BuiltGraph, result: RunResult) -> None:
    """After an error past the forward, the transform returned no outputs: the forward's
    checkpoint is then recorded from the same Functions applied without a transform, so
    that the error itself is what gets compared (check.py compares completed checkpoints)."""
    graph = GraphFunction(built, built.functions)
    with torch.no_grad():
        outs = graph.outputs(_plain_leaves(built))
    for ref, o in zip(graph.refs, outs):
        result.put("forward", f"out:{ref}", o)
    for ref, value in graph.consts.items():
        result.put("forward", f"const:{ref}", value)


# --- the paths ---------------------------------------------------------------------------

TRANSFORMS = {t.name: t for t in (
    Transform("grad", "grad", double=True),
    Transform("vjp", "grad"),
    Transform("jvp", "tangent", forward_mode=True),
    Transform("vmap", "", batched=True),
    Transform("vmap.user", "", batched=True, user_vmap=True),
    Transform("vmap_grad", "grad", batched=True),
    Transform("grad_vmap", "grad", batched=True),
    Transform("jacrev", "grad"),
    Transform("jacfwd", "grad", forward_mode=True),
)}
#: the backend of the `+dynamo` variants (the dynamo path's default)
DYNAMO_BACKEND = "aot_eager"


def reverse_mode(spec: GraphSpec, transform: Transform) -> bool:
    """Does the transform differentiate the graph by reverse mode (a Function's backward)? The
    gradient transforms but jacfwd do; jacfwd too where eager runs no backward, since its forward
    then runs under torch.func.vjp (`observe`)."""
    return transform.derivative == "grad" and (not transform.forward_mode or not has_backward(spec))


def limitation(spec: GraphSpec, transform: Transform) -> str | None:
    """The documented torch limit that keeps `transform` from running `spec`, else None."""
    if any(fn.style == "old" for fn in spec.functions):
        return OLD_STYLE
    if not function_output_refs_of(spec) and transform.name not in ("vmap", "vmap.user"):
        return NO_TENSOR_OUTPUT
    vmapped = transform.batched or transform.name in ("jacrev", "jacfwd")
    # a custom_op without register_vmap is batched by torch's fallback, a loop over the samples
    # (aten/src/ATen/functorch/BatchedFallback.cpp, "we have not yet implemented the batching rule")
    if vmapped and not transform.user_vmap and not all(fn.vmap or fn.api == "custom_op" for fn in spec.functions):
        return NO_VMAP_RULE
    # only a generated rule vmaps the forward itself; a user rule and register_vmap run it on plain tensors
    if transform.batched and not transform.user_vmap and any(
            fn.untraceable == "data_branch" and fn.api == "function" and fn.vmap_rule == "generate"
            for fn in spec.functions):
        return DATA_BRANCH
    if transform.name in ("jacrev", "jacfwd") and spec.dtype in COMPLEX_DTYPES:
        return COMPLEX_JACOBIAN
    # (a custom_op is no autograd.Function: torch.func.jvp does not refuse it, but gives it a zero
    # tangent, known issue func-custom-op-forward-ad-zero-tangent)
    if transform.forward_mode and not all(fn.jvp or fn.api == "custom_op" for fn in spec.functions):
        return NO_JVP
    if gradient_roles(spec, transform) and any(h.kind == "tensor" for h in spec.hooks):
        if transform.forward_mode:
            return TENSOR_HOOK_FORWARD_MODE
        if transform.name == "grad_vmap":
            return TENSOR_HOOK_UNDER_VMAP
    return None


def _user_vmap_rule_limit(e: BaseException) -> UserVmapRuleLimit | None:
    """The UserVmapRuleLimit that `e` is or was raised from (torch.compile may wrap it), if any."""
    while e is not None:
        if isinstance(e, UserVmapRuleLimit):
            return e
        e = e.__cause__ or e.__context__
    return None


class FuncPath:
    exact_vs_eager = False  # batched kernels and Jacobian contractions round differently
    #: torch.func refuses old-style Functions (OLD_STYLE) and vmap Functions without a rule
    #: (NO_VMAP_RULE): a campaign running this path draws most Functions in setup_context style
    #: with generate_vmap_rule (harness.engine.favours_torch_func)
    runs_torch_func = True
    #: a transform keeps no per-apply checkpoints or tensor metadata of eager's
    lifetimes_vs_eager = False

    def __init__(self, transform: Transform, dynamo: bool = False) -> None:
        self.transform = transform
        self.dynamo = dynamo
        self.runs_dynamo = dynamo  # (harness.engine.favours_dynamo)
        self.name = f"func.{transform.name}" + ("+dynamo" if dynamo else "")

    def available(self) -> str | None:
        try:
            import torch.func  # noqa: F401
        except ImportError as e:
            return f"torch {torch.__version__} has no torch.func ({e}); install torch>=2.13."
        return None

    def unsupported(self, spec: GraphSpec) -> str | None:
        return limitation(spec, self.transform)

    def observed(self, spec: GraphSpec, reference: RunResult) -> RunResult:
        return narrowed(spec, self.transform, reference)

    def unreached(self, spec: GraphSpec, reference: RunResult) -> set[tuple[str, str]]:
        return unreached(spec, self.transform, reference)

    def runs_backward(self, spec: GraphSpec) -> bool:
        """jvp and jacfwd compute by forward-mode AD, vmap computes no derivative: none of
        them unpacks a saved tensor, so none raises torch's version-counter error."""
        return runs_phase(self.transform, "backward")

    def _run(self, built: BuiltGraph, compile_fn: Callable[[Callable], Callable]) -> RunResult:
        result = RunResult(self.name)
        graph = graph_function(built, self.transform)
        try:
            observe(graph, self.transform, result, compile_fn)
        except (RuntimeError, TypeError, ValueError, AssertionError, IndexError, NotImplementedError) as e:
            limit = _user_vmap_rule_limit(e)
            if limit is not None:
                return RunResult(self.name, status="unsupported", reason=str(limit))
            result.status, result.error = "error", e
            result.error_checkpoint = "forward_ad" if self.transform.derivative == "tangent" else graph.phase
            if result.error_checkpoint != "forward":
                _record_plain_forward(built, result)
        return result

    def run(self, built: BuiltGraph) -> RunResult:
        if not self.dynamo:
            return self._run(built, lambda f: f)
        from harness.paths.compiled import isolated, run_classified
        from harness.paths.dynamo import GRAPH_BREAK

        def compiled(fullgraph: bool) -> RunResult:
            recorder = TraceRecorder(built.spec)
            with isolated():
                result = run_classified(self.name, lambda: self._run(
                    built, recorder.compiler(DYNAMO_BACKEND, fullgraph)))
            if result.status != "unsupported":
                recorder.record(built, result)
            return result

        whole = compiled(fullgraph=True)
        if whole.status != "unsupported" or not whole.reason.startswith(GRAPH_BREAK):
            return whole
        fallback = compiled(fullgraph=False)
        fallback.note = f"{whole.reason}; ran through Dynamo's eager fallback"
        return fallback


PATHS = {p.name: p for t in TRANSFORMS.values() for p in (FuncPath(t), FuncPath(t, dynamo=True))}
for _path in PATHS.values():
    register(_path)

__all__ = ["BATCH", "CHECKED_SAMPLE", "PATHS", "TRANSFORMS", "FuncPath", "Transform", "limitation",
           "graph_function", "narrowed", "observe", "with_user_vmap"]
