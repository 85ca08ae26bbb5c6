"""Run a user's own `torch.autograd.Function` on one sample the way a registry path runs it.

A generated graph runs through `harness.run.run_graph`; a user's Function with a sample is a
one-node subject that every path runs with the same code through its `run_with(observe)`
(harness/paths/__init__.py): the path hands over its `Way` (its apply, compiled-autograd context
and forward compiler) and does around the run what it does around a graph's. This module is the
`observe` it is handed: forward, weighted loss, backward (or double backward, or forward AD), the
same checkpoints and roles as `run_graph` records, and the lifetime tracker where asked.

What the Function declares (a jvp, a vmap rule, @once_differentiable) decides which runs apply.
"""

from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import torch
import torch.autograd.forward_ad as fwAD
from torch.autograd.function import _SingleLevelFunction, once_differentiable

from harness.build import LOSS_WEIGHTS, SECOND_ORDER_WEIGHTS, TANGENTS
from harness.oracles.lifetimes import LifetimeTracker
from harness.paths import Way
from harness.run import RunResult, RunStopped, recording_errors, weighted_sum
from harness.spec import GraphSpec, LeafSpec

_ONCE_DIFFERENTIABLE = once_differentiable(lambda ctx, *grads: grads).__code__

# --- what the Function declares ----------------------------------------------------------


def has_jvp(function: type) -> bool:
    return function.jvp is not _SingleLevelFunction.jvp


def has_vmap_rule(function: type) -> bool:
    return bool(getattr(function, "generate_vmap_rule", False)) or function.vmap is not torch.autograd.Function.vmap


def is_once_differentiable(function: type) -> bool:
    return getattr(function.backward, "__code__", None) is _ONCE_DIFFERENTIABLE


def as_tuple(out: Any) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def tensor_indices(sample: Sequence[Any]) -> list[int]:
    return [i for i, a in enumerate(sample) if isinstance(a, torch.Tensor)]


def differentiable_indices(sample: Sequence[Any]) -> list[int]:
    return [i for i in tensor_indices(sample) if sample[i].requires_grad]


def fresh(sample: Sequence[Any], device: torch.device | None = None) -> list[Any]:
    """New leaves with the sample's values and requires_grad; other arguments as given."""
    return [a.detach().to(device or a.device).clone().requires_grad_(a.requires_grad)
            if isinstance(a, torch.Tensor) else a for a in sample]


def double_backward_not_applicable(function: type, sample: Sequence[Any]) -> str | None:
    if is_once_differentiable(function):
        return f"{function.__name__}.backward is @once_differentiable"
    if not differentiable_indices(sample):
        return "no input requires grad"
    return None


def jvp_not_applicable(function: type, sample: Sequence[Any]) -> str | None:
    if not has_jvp(function):
        return f"{function.__name__} defines no jvp"
    if not differentiable_indices(sample):
        return "no input requires grad"
    return None


def loss_weights(outputs: Sequence[torch.Tensor], offset: int) -> list[torch.Tensor]:
    """Deterministic loss weights in [-1, 1), one per output, identical on every path.

    BuiltGraph.weights draws a generated graph's from one generator in the graph's one shape and
    dtype; a user's Function returns outputs of any shape and dtype, so each gets its own seed
    (`offset + k`), drawn in float64 and cast to the output's (real) dtype."""
    weights = []
    for k, o in enumerate(outputs):
        gen = torch.Generator().manual_seed(offset + k)
        real = o.real if o.is_complex() else o
        weights.append((torch.rand(o.shape, dtype=torch.float64, generator=gen) * 2 - 1).to(real.dtype).to(o.device))
    return weights


def _weighted_total(tensors: Sequence[torch.Tensor], weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """sum_k weighted_sum(t_k, w_k), a real scalar."""
    terms = [weighted_sum(t, w) for t, w in zip(tensors, weights)]
    assert terms, "called with at least one tensor"
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


# --- the registry's paths, each running the user's Function its own way ---------------------


#: what a path's `unsupported(spec)` reads of a backward run of the user's Function (its
#: backward mode); the user's Function is no generated one, so the spec lists none
RUN_SPECS = {"backward": GraphSpec(shape=(), leaves=(LeafSpec(),), backward="backward"),
             "double": GraphSpec(shape=(), leaves=(LeafSpec(),), backward="double")}


class NotRun(Exception):
    """Raised into a path's run when what the run would judge cannot fail on that path."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class PathRun:
    """What judging one path's run needs to know of the path and of how it ran."""

    name: str
    exact: bool  # bit for bit with eager (the same code runs), else within dtype tolerances
    observes_saved: bool  # saved tensors were seen (through saved_tensors_hooks)
    #: check -> why that check cannot fail in this run (the path ran eager's own code for what it
    #: judges): such a record judges nothing
    not_compared: dict[str, str] = field(default_factory=dict)


def _how_it_ran(path: Any, way: Way | None) -> PathRun:
    if way is None:  # nothing ran (the path said why in its result)
        return PathRun(path.name, path.exact_vs_eager, True)
    # a saved-tensor hook would be captured into a compiled backward, and a traced forward runs none
    return PathRun(path.name, path.exact_vs_eager, not way.compiles, _not_compared(way))


def _not_compared(way: Way) -> dict[str, str]:
    if way.around is not None and way.compile_forward is None:
        return {"outputs": "the forward is eager's own code on this path (compiled autograd compiles the backward only)"}
    if way.recorder is None or way.recorder.function_ops:
        return {}
    untraced = ("Dynamo did not trace the Function (it fell back to eager at its apply), so its backward "
                "is eager's own code on this path")
    why = {"gradients": untraced, "double_backward": untraced}
    if not way.recorder.graphs:
        why["outputs"] = "Dynamo compiled no graph (it fell back to eager for the whole call)"
    return why


def select_paths(names: Iterable[str] | None) -> tuple[list[Any], dict[str, str]]:
    """The selected registry paths (default: every one) that run a user's Function, eager first,
    and why the others cannot run."""
    from harness import paths as registry

    # default: every path but the opt-in families (as campaigns choose); those that cannot run
    # here are reported as unsupported, with why
    chosen = list(names) if names is not None else [
        n for n in registry.names() if n.partition(".")[0] not in registry.OPT_IN_FAMILIES]
    runnable: list[Any] = []
    unavailable: dict[str, str] = {}
    for name in chosen:
        path = registry.get(name)  # an unknown name raises, listing the valid ones
        resolved = path.resolved() if hasattr(path, "resolved") else path
        why = path.available()
        if why is not None:
            unavailable[resolved.name] = why
        elif not hasattr(resolved, "run_with"):
            unavailable[resolved.name] = "this path runs generated graphs only (it has no user-Function runner)"
        else:
            runnable.append(resolved)
    if not any(p.name == "eager" for p in runnable):
        runnable.insert(0, registry.get("eager"))  # the reference for every other path
    return runnable, unavailable


def path_names(names: Iterable[str]) -> list[str]:
    """The paths named, as the runs name them (a family name resolved to its mode)."""
    from harness import paths as registry

    resolved = []
    for name in names:
        path = registry.get(name)
        resolved.append((path.resolved() if hasattr(path, "resolved") else path).name)
    return resolved


# --- one run of one sample on one path ----------------------------------------------------


@contextlib.contextmanager
def _observing_saved(tracker: LifetimeTracker | None) -> Iterator[None]:
    """Track what save_for_backward keeps: the pack hook stores a detached alias (so a saved
    output does not hold its own grad_fn in a cycle, as harness.run does) and tracks both the
    saved tensor and the alias the graph holds."""
    if tracker is None:
        yield
        return
    count = [0]

    def pack(t: torch.Tensor) -> list[torch.Tensor]:
        alias = t.detach()
        role = f"saved:f0.{count[0]}"
        tracker.saved[role] = 0
        tracker.refs[role] = torch._C._WeakTensorRef(alias)
        tracker.track(f"saved_source:{count[0]}", t)
        count[0] += 1
        return [alias]

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda packed: packed[0]):
        yield


def observe(function: type, sample: Sequence[Any], path: Any, mode: str, *,
            lifetimes: bool = False, timings: dict[str, float] | None = None) -> RunResult:
    """Run `function` on `sample` the way `path` (a registry path) does, recording what harness.run records.

    mode: "backward" (forward, weighted loss, .backward()), "double" (autograd.grad with
    create_graph, then the gradient of the weighted gradients), "forward_ad" (duals in, tangents out).
    With `lifetimes` gc is off meanwhile, so what only a cycle keeps alive is seen as such.
    """
    return observe_on(function, sample, path, mode, lifetimes=lifetimes, timings=timings)[0]


def observe_on(function: type, sample: Sequence[Any], path: Any, mode: str, *, lifetimes: bool = False,
               timings: dict[str, float] | None = None) -> tuple[RunResult, PathRun]:
    """observe(), and how the path ran it (the way of its last run). Raises NotRun where the
    run would judge nothing that can fail on this path."""
    timings = {} if timings is None else timings
    ways: list[Way] = []

    def run(way: Way) -> RunResult:  # a path may run it twice (Dynamo's fallback): fresh records each time
        if mode == "forward_ad" and way.compiles:
            raise NotRun("forward AD is not compiled on this path: it runs eager's own code")
        ways.append(way)
        result = RunResult(path.name)
        tracker = LifetimeTracker() if lifetimes else None
        gc_was_enabled = gc.isenabled()
        if tracker is not None:
            gc.disable()
        try:
            if mode == "forward_ad":
                _forward_ad(function, sample, way, result)
            else:
                _forward_backward(function, sample, way, mode, result, tracker, timings)
        except RunStopped:
            pass
        finally:
            if gc_was_enabled:
                gc.enable()
        if tracker is not None:
            started = time.perf_counter()
            if result.status != "error":
                tracker.check_released()
            tracker.store(result)
            timings["lifetimes"] = timings.get("lifetimes", 0.0) + time.perf_counter() - started
        return result
    result = path.run_with(run)
    return result, _how_it_ran(path, ways[-1] if ways else None)


def _forward(function: type, args: Sequence[Any], way: Way) -> Any:
    """The Function applied the path's way (under its forward compiler, where it has one)."""
    if way.compile_forward is None:
        return way.apply(0, function, args)
    return way.compile_forward(lambda *a: way.apply(0, function, a))(*args)


def _around_backward(way: Way) -> contextlib.AbstractContextManager:
    return contextlib.nullcontext() if way.around is None else way.around()


def _forward_backward(function: type, sample: Sequence[Any], way: Way, mode: str, result: RunResult,
                      tracker: LifetimeTracker | None, timings: dict[str, float]) -> None:
    leaves = fresh(sample)
    indices = tensor_indices(leaves)
    leaf_refs = {f"x{i}": leaves[i] for i in indices}
    if tracker is not None:
        tracker.record("start", leaf_refs)
    started = time.perf_counter()
    with recording_errors(result, "forward"), torch.enable_grad(), \
            _observing_saved(tracker if not way.compiles else None):
        # a copy per argument: a Function that updates an input in place (mark_dirty) never
        # touches the leaf or the caller's sample, as on every path
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in leaves]
        versions = {i: args[i]._version for i in indices}
        outs = as_tuple(_forward(function, args, way))
    timings["outputs"] = timings.get("outputs", 0.0) + time.perf_counter() - started
    _record_outputs(outs, result)
    _record_mutations(args, versions, outs, result)
    held = {**leaf_refs, **{f"arg{i}": args[i] for i in indices},
            **{f"out:{k}": o for k, o in enumerate(outs) if isinstance(o, torch.Tensor)}}
    if tracker is not None:
        if any(isinstance(o, torch.Tensor) and o.requires_grad for o in outs):
            result.put("life:nodes", "requires_grad", (0,))
        tracker.record("forward", held)
    started = time.perf_counter()
    _backward(outs, leaves, way, mode, result)
    timings["gradients"] = timings.get("gradients", 0.0) + time.perf_counter() - started
    if tracker is not None:
        tracker.record("backward", held)
        # drop every reference the run holds but the leaves, then the leaves
        held.clear()
        del args, outs
        tracker.record("drop_outputs", leaf_refs)
        leaf_refs.clear()
        leaves.clear()
        tracker.record("drop_all", {})


def _record_outputs(outs: tuple, result: RunResult) -> None:
    # in a function of its own: a loop variable here would keep the last output alive
    for k, o in enumerate(outs):
        if isinstance(o, torch.Tensor):
            result.put("forward", f"out:{k}", o)
            result.put("forward", f"requires_grad:{k}", o.requires_grad)
        else:
            result.put("forward", f"value:{k}", o)


def _record_mutations(args: list[Any], versions: dict[int, int], outs: tuple, result: RunResult) -> None:
    """Per argument the forward modified in place: declared (ctx.mark_dirty rebased it onto the
    Function's node), undeclared, or unknown (no graph was recorded, so nothing tells)."""
    nodes = [o.grad_fn for o in outs if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    for i, version in versions.items():
        if args[i]._version == version:
            continue
        if not nodes:
            status = "unknown"
        else:
            status = "declared" if any(args[i].grad_fn is n for n in nodes) else "undeclared"
        result.put("mark_dirty", f"arg{i}", status)


def _backward(outs: tuple, leaves: list[Any], way: Way, mode: str, result: RunResult) -> None:
    grad_leaves = [(f"x{i}", leaves[i]) for i in differentiable_indices(leaves)]
    diff = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
    if not diff or not grad_leaves:
        result.put("backward", "skipped", "nothing requires grad")
        return
    with torch.enable_grad():
        loss = _weighted_total(diff, loss_weights(diff, LOSS_WEIGHTS))
    inputs = [t for _, t in grad_leaves]
    with recording_errors(result, "backward"), _around_backward(way):
        if mode == "backward":
            loss.backward()
            grads = [t.grad for t in inputs]
        else:
            grads = list(torch.autograd.grad(loss, inputs, allow_unused=True, create_graph=True))
    for (name, _), g in zip(grad_leaves, grads):
        result.put("backward", f"grad:{name}", None if g is None else g.clone())
    if mode != "double":
        return
    terms = [(g, w) for g, w in zip(grads, loss_weights(inputs, SECOND_ORDER_WEIGHTS))
             if g is not None and g.requires_grad]
    if not terms:  # the first-order gradients are constants: no second-order ones
        for name, _ in grad_leaves:
            result.put("double_backward", f"dgrad:{name}", None)
        return
    with recording_errors(result, "double_backward"), _around_backward(way):
        total = _weighted_total([g for g, _ in terms], [w for _, w in terms])
        second = torch.autograd.grad(total, inputs, allow_unused=True)
    for (name, _), g in zip(grad_leaves, second):
        result.put("double_backward", f"dgrad:{name}", g)


def _forward_ad(function: type, sample: Sequence[Any], way: Way, result: RunResult) -> None:
    leaves = fresh(sample)
    diff = differentiable_indices(leaves)
    tangents = dict(zip(diff, loss_weights([leaves[i] for i in diff], TANGENTS)))
    with recording_errors(result, "forward_ad"), fwAD.dual_level(), torch.enable_grad():
        args = [fwAD.make_dual(a.clone(), tangents[i]) if i in tangents
                else a.clone() if isinstance(a, torch.Tensor) else a for i, a in enumerate(leaves)]
        outs = as_tuple(_forward(function, args, way))
        for k, o in enumerate(outs):
            if isinstance(o, torch.Tensor):
                result.put("forward_ad", f"tangent:{k}", fwAD.unpack_dual(o).tangent)


__all__ = ["NotRun", "PathRun", "RUN_SPECS", "as_tuple", "differentiable_indices", "double_backward_not_applicable",
           "fresh", "has_jvp", "has_vmap_rule", "is_once_differentiable", "jvp_not_applicable", "loss_weights",
           "observe", "observe_on", "path_names", "select_paths", "tensor_indices"]
