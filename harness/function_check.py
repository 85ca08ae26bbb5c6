"""Check a user's own `torch.autograd.Function` on every execution path: `check_function`.

The fuzzer (harness.campaign) checks Functions it generates from specs; this module checks one
a project wrote. It reuses the harness's real parts: the paths' own seams (stock `apply`, the
native C++ `apply`, compiled autograd around the backward, torch.compile of the forward, with
the compiled paths' isolation and classification of documented limits), the runner's
checkpoints and `RunResult`, the comparator, and the lifetime tracker and its rules.

Checks (names used in reports, errors and `checks=`):

  outputs          every path's outputs (values, requires_grad, non-tensor outputs) agree with eager's
  gradients        every path's gradients of a weighted loss agree with eager's
  gradcheck        float64 `torch.autograd.gradcheck` of the backward (finite differences)
  jvp              the user `jvp`: float64 gradcheck of forward AD, and tangents agree across paths
  vmap             `torch.vmap` (the vmap rule or generate_vmap_rule) agrees with a loop, for
                   outputs and per-sample gradients (`torch.func.vjp` under vmap)
  double_backward  float64 `gradgradcheck`, and second-order gradients agree across paths
  mark_dirty       every input the forward modified in place was declared with ctx.mark_dirty
  lifetimes        saved tensors released by backward, nothing leaked, no reference cycles

Eager (the installed torch's `Function.apply`) is the reference: it is judged by the float64
oracles, and every other path is compared with it, bit for bit where the path runs the same
code (owned, borrowed) and within torch.testing's default per-dtype tolerances where it
compiles (compiled, dynamo): the documented tolerances for comparing one computation done by
two kernels, since nothing is known here about the user's ops.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import inspect
import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch
import torch.autograd.forward_ad as fwAD
from torch.autograd.function import _SingleLevelFunction, once_differentiable

from harness import known_issues
from harness.oracles.compare import EXACT, Mismatch, Tolerance, compare
from harness.oracles.lifetimes import LifetimeTracker, rule_violations
from harness.paths import Way
from harness.run import CHECKPOINTS, RunResult, RunStopped, recording_errors
from harness.spec import GraphSpec, LeafSpec

CHECKS = ("outputs", "gradients", "gradcheck", "jvp", "vmap", "double_backward", "mark_dirty", "lifetimes")
#: the checks whose results come from running each path (the others run the stock apply)
PATH_CHECKS = ("outputs", "gradients", "jvp", "double_backward", "lifetimes")
#: which check judges each runner checkpoint
CHECK_OF_CHECKPOINT = {"forward": "outputs", "backward": "gradients", "double_backward": "double_backward",
                       "forward_ad": "jvp"}

#: finite differences cost two forwards per input element (slow mode, see harness.oracles.math)
GRADCHECK_MAX_ELEMENTS = 512
#: batch size of the vmap check
VMAP_BATCH = 3
#: torch.testing.assert_close's documented default (rtol, atol) per dtype
DEFAULT_TOLERANCES = {
    torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7), torch.complex32: (1e-3, 1e-5), torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}
#: the statuses that judged something (the others say why nothing was judged, or that eager is the reference)
JUDGED = ("passed", "failed")
#: the float64 oracles and vmap run the stock apply; reports name them after what they are
FLOAT64 = "eager float64"
VMAP = "torch.vmap"

_ONCE_DIFFERENTIABLE = once_differentiable(lambda ctx, *grads: grads).__code__


# --- report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckRecord:
    """One check of one sample on one path."""

    check: str
    path: str
    #: passed | failed | error | partly (a known torch issue explained part of it, which was left
    #: unjudged; the rest agreed) | reference | unsupported | not_applicable
    status: str
    detail: str = ""
    seconds: float = 0.0
    sample: int = 0
    #: known torch issues (harness/known_issues/) that explained differences here; what they
    #: do not explain was still judged, and fails the record
    known: tuple[str, ...] = ()


@dataclass
class FunctionReport:
    """Everything `check_function` ran, sample by sample; statistics are derived on demand."""

    function: str
    records: list[CheckRecord] = field(default_factory=list)
    samples: list[tuple] = field(default_factory=list)
    #: the paths asked for (by name, or all that run here by default) and the checks asked for by
    #: name (None: every check, each where it applies): `unchecked` names those that judged nothing
    paths: list[str] = field(default_factory=list)
    checks_asked: tuple[str, ...] | None = None

    @property
    def failures(self) -> list[CheckRecord]:
        """Failed checks, and checks that could not complete because something raised (error)."""
        return [r for r in self.records if r.status in ("failed", "error")]

    def outcomes(self) -> dict[tuple[str, str], tuple[str, str]]:
        """(check, path) -> (status, detail) over every sample: failed if any failed, else
        passed if any passed, else why it did not run."""
        rank = ("failed", "error", "passed", "partly", "reference", "unsupported", "not_applicable")
        out: dict[tuple[str, str], CheckRecord] = {}
        for r in self.records:
            held = out.get((r.check, r.path))
            if held is None or rank.index(r.status) < rank.index(held.status):
                out[(r.check, r.path)] = r
        return {key: (r.status, r.detail) for key, r in out.items()}

    def seconds_by_check(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for r in self.records:
            totals[r.check] = totals.get(r.check, 0.0) + r.seconds
        return totals

    def checks_run(self) -> list[str]:
        """Checks that judged something (passed or failed) on at least one path."""
        return [c for c in CHECKS if any(r.check == c and r.status in JUDGED for r in self.records)]

    def unchecked(self) -> list[str]:
        """What was asked for and judged nothing (no check passed or failed there), each with why:
        the whole run, each path asked for (eager's own code counts the float64 oracles and vmap,
        which run it), each check asked for by name. Empty when everything asked for was looked at."""
        def why(records: list[CheckRecord]) -> str:
            reasons = dict.fromkeys(f"{r.check}: {r.status}" + (f" ({r.detail.splitlines()[0]})" if r.detail else "")
                                    for r in records)
            return "; ".join(reasons) or "no record"
        judged = [r for r in self.records if r.status in JUDGED]
        if not judged:
            return [f"at all ({why(self.records)})"]
        missing = []
        for path in self.paths:
            on_path = [r for r in self.records if r.path == path or path == "eager" and r.path in (FLOAT64, VMAP)]
            if not any(r.status in JUDGED for r in on_path):
                missing.append(f"on path {path} ({why(on_path)})")
        for check in self.checks_asked or ():
            of_check = [r for r in self.records if r.check == check]
            if not any(r.status in JUDGED for r in of_check):
                missing.append(f"for check {check} ({why(of_check)})")
        return missing

    def table(self) -> str:
        seconds: dict[tuple[str, str], float] = {}
        for r in self.records:
            seconds[(r.check, r.path)] = seconds.get((r.check, r.path), 0.0) + r.seconds
        lines = [f"{self.function}: {len(self.samples)} sample(s)",
                 f"  {'check':<16} {'path':<20} {'status':<15} {'seconds':>8}  detail"]
        for (check, path), (status, detail) in sorted(
                self.outcomes().items(), key=lambda kv: (CHECKS.index(kv[0][0]), kv[0][1])):
            lines.append(f"  {check:<16} {path:<20} {status:<15} {seconds[(check, path)]:8.3f}  {detail}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


class NothingChecked(AssertionError):
    """Nothing failed, but something asked for judged nothing (`FunctionReport.unchecked`): never a pass."""

    def __init__(self, report: FunctionReport) -> None:
        self.report = report
        super().__init__(f"{report.function}: nothing checked " + "; ".join(report.unchecked())
                         + ". Choose paths and checks that apply to it (paths=, checks=), or samples that "
                           "exercise them (inputs that require grad, for gradients).")


class FunctionCheckError(AssertionError):
    """A user Function failed checks: every failed check, each with a standalone reproducer."""

    def __init__(self, report: FunctionReport, reproducers: dict[str, str]) -> None:
        self.report = report
        self.reproducers = reproducers  # check -> Python source
        failed = report.failures
        checks = len({(r.check, r.path) for r in failed})
        lines = [f"{report.function} failed {checks} check(s) over {len(report.samples)} sample(s):"]
        for r in failed:
            lines.append(f"  {r.check} [{r.path}] sample {r.sample}: {r.detail}")
        for check, source in reproducers.items():
            lines += ["", f"Reproducer for {check} (standalone Python; exits 1 while it fails):", source]
        super().__init__("\n".join(lines))


# --- what the Function declares ----------------------------------------------------------


def has_jvp(function: type) -> bool:
    return function.jvp is not _SingleLevelFunction.jvp


def has_vmap_rule(function: type) -> bool:
    return bool(getattr(function, "generate_vmap_rule", False)) or function.vmap is not torch.autograd.Function.vmap


def is_once_differentiable(function: type) -> bool:
    return getattr(function.backward, "__code__", None) is _ONCE_DIFFERENTIABLE


def _as_tuple(out: Any) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def _tensor_indices(sample: Sequence[Any]) -> list[int]:
    return [i for i, a in enumerate(sample) if isinstance(a, torch.Tensor)]


def _differentiable_indices(sample: Sequence[Any]) -> list[int]:
    return [i for i in _tensor_indices(sample) if sample[i].requires_grad]


def _fresh(sample: Sequence[Any], device: torch.device | None = None) -> list[Any]:
    """New leaves with the sample's values and requires_grad; other arguments as given."""
    return [a.detach().to(device or a.device).clone().requires_grad_(a.requires_grad)
            if isinstance(a, torch.Tensor) else a for a in sample]


def _weights(outputs: Sequence[torch.Tensor], offset: int) -> list[torch.Tensor]:
    """Deterministic loss weights in [-1, 1), one per output, identical on every path."""
    weights = []
    for k, o in enumerate(outputs):
        gen = torch.Generator().manual_seed(offset + k)
        real = o.real if o.is_complex() else o
        weights.append((torch.rand(o.shape, dtype=torch.float64, generator=gen) * 2 - 1).to(real.dtype).to(o.device))
    return weights


def _weighted_sum(tensors: Sequence[torch.Tensor], weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """sum_k (t_k * w_k).sum(), a real scalar (the real part for complex outputs)."""
    total = None
    for t, w in zip(tensors, weights):
        term = (t * w).sum()
        term = term.real if term.is_complex() else term
        total = term if total is None else total + term
    assert total is not None, "called with at least one tensor"
    return total


# --- paths: the registry's, each running the user's Function its own way -------------------


#: what a path's `unsupported(spec)` reads of a backward run of the user's Function (its
#: backward mode); the user's Function is no generated one, so the spec lists none
_RUN_SPECS = {"backward": GraphSpec(shape=(), leaves=(LeafSpec(),), backward="backward"),
              "double": GraphSpec(shape=(), leaves=(LeafSpec(),), backward="double")}


class _NotRun(Exception):
    """Raised into a path's run when what the run would judge cannot fail on that path."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class _PathRun:
    """What judging one path's run needs to know of the path and of how it ran."""

    name: str
    exact: bool  # bit for bit with eager (the same code runs), else within dtype tolerances
    observes_saved: bool  # saved tensors were seen (through saved_tensors_hooks)
    #: check -> why that check cannot fail in this run (the path ran eager's own code for what it
    #: judges): such a record is not_applicable, never passed
    not_compared: dict[str, str] = field(default_factory=dict)


def _how_it_ran(path: Any, way: Way | None) -> _PathRun:
    if way is None:  # nothing ran (the path said why in its result)
        return _PathRun(path.name, path.exact_vs_eager, True)
    # a saved-tensor hook would be captured into a compiled backward, and a traced forward runs none
    return _PathRun(path.name, path.exact_vs_eager, not way.compiles, _not_compared(way))


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


def _paths(names: Iterable[str] | None) -> tuple[list[Any], dict[str, str]]:
    """The selected registry paths (default: every one) that run a user's Function, and why
    others cannot run."""
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
    return _observe(function, sample, path, mode, lifetimes=lifetimes, timings=timings)[0]


def _observe(function: type, sample: Sequence[Any], path: Any, mode: str, *, lifetimes: bool = False,
             timings: dict[str, float] | None = None) -> tuple[RunResult, _PathRun]:
    """observe(), and how the path ran it (the way of its last run)."""
    timings = {} if timings is None else timings
    ways: list[Way] = []

    def run(way: Way) -> RunResult:  # a path may run it twice (Dynamo's fallback): fresh records each time
        if mode == "forward_ad" and way.compiles:
            raise _NotRun("forward AD is not compiled on this path: it runs eager's own code")
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
    leaves = _fresh(sample)
    tensor_idx = _tensor_indices(leaves)
    leaf_refs = {f"x{i}": leaves[i] for i in tensor_idx}
    if tracker is not None:
        tracker.record("start", leaf_refs)
    started = time.perf_counter()
    with recording_errors(result, "forward"), torch.enable_grad(), \
            _observing_saved(tracker if not way.compiles else None):
        # a copy per argument: a Function that updates an input in place (mark_dirty) never
        # touches the leaf or the caller's sample, as on every path
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in leaves]
        versions = {i: args[i]._version for i in tensor_idx}
        outs = _as_tuple(_forward(function, args, way))
    timings["outputs"] = timings.get("outputs", 0.0) + time.perf_counter() - started
    _record_outputs(outs, result)
    _record_mutations(args, versions, outs, result)
    held = {**leaf_refs, **{f"arg{i}": args[i] for i in tensor_idx},
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
    grad_leaves = [(f"x{i}", leaves[i]) for i in _differentiable_indices(leaves)]
    diff = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
    if not diff or not grad_leaves:
        result.put("backward", "skipped", "nothing requires grad")
        return
    with torch.enable_grad():
        loss = _weighted_sum(diff, _weights(diff, 1_000_003))
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
    terms = [(g, w) for g, w in zip(grads, _weights(inputs, 2_000_003)) if g is not None and g.requires_grad]
    if not terms:  # the first-order gradients are constants: no second-order ones
        for name, _ in grad_leaves:
            result.put("double_backward", f"dgrad:{name}", None)
        return
    with recording_errors(result, "double_backward"), _around_backward(way):
        total = _weighted_sum([g for g, _ in terms], [w for _, w in terms])
        second = torch.autograd.grad(total, inputs, allow_unused=True)
    for (name, _), g in zip(grad_leaves, second):
        result.put("double_backward", f"dgrad:{name}", g)


def _forward_ad(function: type, sample: Sequence[Any], way: Way, result: RunResult) -> None:
    leaves = _fresh(sample)
    tangents = dict(zip(_differentiable_indices(leaves), _weights(
        [leaves[i] for i in _differentiable_indices(leaves)], 3_000_017)))
    with recording_errors(result, "forward_ad"), fwAD.dual_level(), torch.enable_grad():
        args = [fwAD.make_dual(a.clone(), tangents[i]) if i in tangents
                else a.clone() if isinstance(a, torch.Tensor) else a for i, a in enumerate(leaves)]
        outs = _as_tuple(_forward(function, args, way))
        for k, o in enumerate(outs):
            if isinstance(o, torch.Tensor):
                result.put("forward_ad", f"tangent:{k}", fwAD.unpack_dual(o).tangent)


# --- judging ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _DtypeTolerances:
    """torch.testing's default tolerance for each compared tensor's own dtype."""

    expected: RunResult

    def for_role(self, checkpoint: str, role: str) -> Tolerance:
        t = self.expected.tensors.get(checkpoint, {}).get(role)
        return dtype_tolerance(t.dtype if t is not None else torch.float32)


def dtype_tolerance(dtype: torch.dtype) -> Tolerance:
    rtol, atol = DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
    return Tolerance(exact=False, rtol=rtol, atol=atol) if rtol or atol else EXACT


def _judged(result: RunResult) -> RunResult:
    """What is compared between paths: values, not lifetimes or mutation bookkeeping."""
    return dataclasses.replace(result, values={c: v for c, v in result.values.items()
                                               if c != "mark_dirty" and not c.startswith("life:")})


def _against_eager(eager: RunResult, result: RunResult, exact: bool) -> list[Mismatch]:
    from harness.oracles.compare import against_eager

    eager, result = _judged(eager), _judged(result)
    return against_eager(eager, result, EXACT if exact else _DtypeTolerances(eager), lifetimes=False)


#: the lifetime checkpoints (harness.oracles.lifetimes) in the user's words
WHEN = {"forward": "after the forward", "backward": "after the backward",
        "drop_outputs": "once the outputs and the graph were dropped", "drop_all": "in the end"}


def _role_text(role: str) -> str:
    """A lifetime role in the user's words."""
    kind, _, n = role.rpartition(":") if ":" in role else ("", "", role)
    if kind == "saved":
        return f"saved tensor {n.split('.')[-1]} (as the graph holds it)"
    if kind == "saved_source":
        return f"the tensor passed to save_for_backward as saved tensor {n}"
    if kind == "out":
        return f"output {n}"
    if role.startswith("arg"):
        return f"argument {role[3:]} (the copy the Function was given)"
    if role.startswith("x"):
        return f"argument {role[1:]}'s leaf (what its gradient accumulates into)"
    return role


def _mismatch_text(m: Mismatch) -> str:
    return f"{m.checkpoint} {m.role}: {m.detail}" + (
        f" (max abs err {m.max_abs:.3g}, max rel err {m.max_rel:.3g})" if m.max_abs else "")


# --- the checks of one sample ---------------------------------------------------------------


@dataclass
class _Options:
    paths: list[Any]  # registry paths with run_with, eager first
    unavailable: dict[str, str]
    checks: tuple[str, ...]
    device: torch.device | None


def _check_sample(function: type, sample: tuple, index: int, options: _Options) -> list[CheckRecord]:
    records: list[CheckRecord] = []
    if options.device is not None:
        sample = tuple(_fresh(sample, options.device))

    def add(check: str, path: str, status: str, detail: str = "", seconds: float = 0.0,
            known: tuple[str, ...] = ()) -> None:
        if check in options.checks:
            records.append(CheckRecord(check, path, status, detail, seconds, index, known))

    for path, why in options.unavailable.items():
        for check in PATH_CHECKS:
            add(check, path, "unsupported", f"path not available here: {why}")
    _check_paths(function, sample, options, add)
    if "mark_dirty" in options.checks:
        with _isolated(function, ("mark_dirty",), "eager", add):
            _check_mark_dirty(function, sample, options, add)
    for check, oracle in (("gradcheck", _gradcheck), ("jvp", _gradcheck_forward_ad),
                          ("double_backward", _gradgradcheck)):
        if check in options.checks:
            with _isolated(function, (check,), FLOAT64, add):
                started = time.perf_counter()
                status, detail = oracle(function, sample)
                add(check, FLOAT64, status, detail, time.perf_counter() - started)
    if "vmap" in options.checks:
        with _isolated(function, ("vmap",), VMAP, add):
            started = time.perf_counter()
            status, detail = _check_vmap(function, sample)
            add("vmap", VMAP, status, detail, time.perf_counter() - started)
    return records


@contextlib.contextmanager
def _isolated(function: type, checks: Sequence[str], path: str, add: Callable[..., None]) -> Iterator[None]:
    """One check on one path: whatever escapes it becomes that record's `error`, with its
    traceback, so the report always completes. The record tells the user's Function raising
    (a frame of the Function's own file is on the traceback) from an error of the harness or
    torch itself."""
    started = time.perf_counter()
    try:
        yield
    except Exception as e:  # noqa: BLE001  reported as the record's error, never swallowed
        frames = traceback.extract_tb(e.__traceback__)
        where = _source_file(function)
        who = (f"{function.__name__} raised" if where is not None and any(f.filename == where for f in frames)
               else "internal error (of the harness or torch, not your Function; please report it):")
        shown = "".join(traceback.format_exception(e)[-6:]).rstrip()
        for check in checks:
            add(check, path, "error", f"{who} {type(e).__name__}: {e}\n{shown}", time.perf_counter() - started)


def _source_file(function: type) -> str | None:
    try:
        return inspect.getsourcefile(function)
    except (OSError, TypeError):
        return None


def _check_paths(function: type, sample: tuple, options: _Options, add: Callable[..., None]) -> None:
    """outputs, gradients, lifetimes (one run per path), double_backward and jvp (one run each)."""
    wants = set(options.checks)
    runs = []
    if wants & {"outputs", "gradients", "lifetimes"}:
        runs.append(("backward", ("outputs", "gradients", "lifetimes")))
    if "double_backward" in wants:
        why = _double_backward_not_applicable(function, sample)
        if why is None:
            runs.append(("double", ("double_backward",)))
        else:
            for path in options.paths:
                add("double_backward", path.name, "not_applicable", why)
    if "jvp" in wants:
        why = _jvp_not_applicable(function, sample)
        if why is None:
            runs.append(("forward_ad", ("jvp",)))
        else:
            for path in options.paths:
                add("jvp", path.name, "not_applicable", why)
    for mode, judged in runs:
        eager = None
        for path in options.paths:  # eager first: the reference
            timings: dict[str, float] = {}
            started = time.perf_counter()
            reason = path.unsupported(_RUN_SPECS[mode]) if mode in _RUN_SPECS else None
            if reason is not None:
                for check in judged:
                    add(check, path.name, "unsupported", reason)
                continue
            with _isolated(function, judged, path.name, add):
                try:
                    result, ran = _observe(function, sample, path, mode, timings=timings,
                                           lifetimes="lifetimes" in wants and mode == "backward")
                except _NotRun as e:  # cannot fail here: eager's own code
                    for check in judged:
                        add(check, path.name, "not_applicable", e.why)
                    continue
                elapsed = time.perf_counter() - started
                if path.name == "eager":
                    eager = result
                if eager is None:  # eager itself raised outside the runner: nothing to compare with
                    for check in judged:
                        add(check, path.name, "not_applicable", "eager, the reference, did not complete")
                    continue
                _judge_run(judged, ran, result, eager, timings, elapsed, add)


def _judge_run(judged: tuple[str, ...], runner: _PathRun, result: RunResult, eager: RunResult | None,
               timings: dict[str, float], elapsed: float, add: Callable[..., None]) -> None:
    """One record per judged check: failed (with every problem), passed, eager's "reference",
    unsupported, or not_applicable when the run stopped before the check's checkpoint."""
    if result.status == "unsupported":
        for check in judged:
            add(check, runner.name, "unsupported", result.reason)
        return
    incompatible = documented_incompatibility(result.error) if result.status == "error" else None
    if incompatible is not None:
        for check in judged:
            add(check, runner.name, "unsupported", incompatible)
        return
    problems, known = _problems(judged, runner, result, eager)
    note = result.note  # how the path got this result, e.g. through Dynamo's eager fallback
    for check in judged:
        seconds = timings.get(check, 0.0) if len(judged) > 1 else elapsed
        issues = known.get(check, ())
        beside = f"known: {', '.join(_known_text(k) for k in issues)}" if issues else ""
        if problems[check]:
            detail = "; ".join(problems[check]) + "".join(f" ({t})" for t in (beside, note) if t)
            add(check, runner.name, "failed", detail, seconds, issues)
        elif not _reached(check, result):
            add(check, runner.name, "not_applicable", f"the run stopped earlier ({result.describe_error()})", seconds)
        elif check == "gradients" and "skipped" in result.values.get("backward", {}):
            add(check, runner.name, "not_applicable", "no gradient to compare: nothing requires grad (no output "
                "that requires grad, or no input)", seconds)
        elif runner.name == "eager" and check != "lifetimes":
            add(check, runner.name, "reference", "the reference for the other paths; judged by the float64 oracles",
                seconds)
        elif check in runner.not_compared:
            add(check, runner.name, "not_applicable", "; ".join(t for t in (runner.not_compared[check], note) if t),
                seconds)
        else:
            unseen = "" if check != "lifetimes" or runner.observes_saved else (
                "saved tensors are not observed on this path (a saved-tensor hook would change what it "
                "compiles); leaks, cycles and use counts were checked")
            # a known issue without a workaround explained part of the check: that part is not judged
            left = f"what {', '.join(issues)} damages was left unjudged; the rest agreed" if issues else ""
            add(check, runner.name, "partly" if issues else "passed",
                "; ".join(t for t in (left, beside, unseen, note) if t), seconds, issues)


def _known_text(issue_id: str) -> str:
    issue = next(k for k in known_issues.KNOWN_ISSUES if k.id == issue_id)
    return f"{issue.id} (harness/known_issues/reproducers/{issue.reproducer})"


def _problems(judged: tuple[str, ...], runner: _PathRun, result: RunResult,
              eager: RunResult | None) -> tuple[dict[str, list[str]], dict[str, tuple[str, ...]]]:
    """check -> what is wrong: eager's own errors; every other path's differences from eager;
    the lifetime rules of a run that completed. And check -> the known torch issues that
    explained some differences (as in campaigns: only the differences each one causes)."""
    problems: dict[str, list[str]] = {check: [] for check in judged}
    known: dict[str, tuple[str, ...]] = {}

    def note(checkpoint: str, text: str) -> None:
        check = CHECK_OF_CHECKPOINT.get(checkpoint, judged[0])
        problems[check if check in problems else judged[0]].append(text)

    if runner.name == "eager":
        if result.status == "error":
            note(result.error_checkpoint, f"eager raised {result.describe_error()}")
    else:
        assert eager is not None, "eager runs first: it is the reference"
        for m in _against_eager(eager, result, runner.exact):
            note(m.checkpoint, _mismatch_text(m))
    if "lifetimes" in problems and result.status != "error":
        violations = [Mismatch(result.path, "lifetime rule", v.checkpoint, v.role, v.detail)
                      for v in rule_violations(result, "backward")]
        issues = known_issues.function_hits(result, violations) if violations else []
        unexplained = [m for m in violations if not known_issues.explained(None, issues, m)]
        problems["lifetimes"] = [f"{_role_text(m.role)} {WHEN.get(m.checkpoint, 'at ' + m.checkpoint)}: {m.detail}"
                                 for m in unexplained]
        if issues:
            known["lifetimes"] = tuple(k.id for k in issues)
    return problems, known


#: torch's documented incompatibilities, by the error torch raises: not the Function's defect,
#: and nothing to compare; the record says `unsupported` with the source
DOCUMENTED_INCOMPATIBILITIES = (
    (re.compile(r"When use_reentrant=True, torch\.utils\.checkpoint is incompatible with \.grad\(\)"),
     ("torch.utils.checkpoint with use_reentrant=True is documented as incompatible with torch.autograd.grad "
      "(which double backward, gradcheck and gradgradcheck use; torch.utils.checkpoint's docstring): "
      "check use_reentrant=False for these")),
)


def documented_incompatibility(error: BaseException | None) -> str | None:
    """The documented torch limitation this error is, or None."""
    for pattern, why in DOCUMENTED_INCOMPATIBILITIES:
        if error is not None and pattern.search(str(error)):
            return why
    return None


def _reached(check: str, result: RunResult) -> bool:
    """Whether the run got as far as the checkpoint that `check` judges (lifetimes: the end)."""
    if result.status != "error":
        return True
    if check == "lifetimes":
        return False
    at = {c: k for k, c in CHECK_OF_CHECKPOINT.items()}[check]
    return CHECKPOINTS.index(at) <= CHECKPOINTS.index(result.error_checkpoint)


def _double_backward_not_applicable(function: type, sample: Sequence[Any]) -> str | None:
    if is_once_differentiable(function):
        return f"{function.__name__}.backward is @once_differentiable"
    if not _differentiable_indices(sample):
        return "no input requires grad"
    return None


def _jvp_not_applicable(function: type, sample: Sequence[Any]) -> str | None:
    if not has_jvp(function):
        return f"{function.__name__} defines no jvp"
    if not _differentiable_indices(sample):
        return "no input requires grad"
    return None


def _check_mark_dirty(function: type, sample: tuple, options: _Options, add: Callable[..., None]) -> None:
    started = time.perf_counter()
    from harness import paths as registry

    result = observe(function, sample, registry.get("eager"), "backward")
    mutated = result.values.get("mark_dirty", {})
    undeclared = [role for role, status in mutated.items() if status == "undeclared"]
    unknown = [role for role, status in mutated.items() if status == "unknown"]
    seconds = time.perf_counter() - started
    if undeclared:
        add("mark_dirty", "eager", "failed",
            f"forward modified {', '.join(r.replace('arg', 'argument ') for r in undeclared)} in place without "
            "ctx.mark_dirty(), so autograd does not know it changed and gradients through its later uses "
            "skip this Function (declare every input the forward modifies with ctx.mark_dirty and return it)",
            seconds)
    elif unknown:
        add("mark_dirty", "eager", "not_applicable",
            f"forward modified {', '.join(unknown)} in place, but no output requires grad, so no graph "
            "tells whether it was declared", seconds)
    elif result.status == "error" and result.error_checkpoint == "forward":
        add("mark_dirty", "eager", "not_applicable", f"the forward raised {result.describe_error()}", seconds)
    else:
        add("mark_dirty", "eager", "passed", "no undeclared in-place update" if not mutated else
            f"in-place update of {', '.join(mutated)} declared", seconds)


# --- float64 oracles --------------------------------------------------------------------


def _float64_function(function: type, sample: Sequence[Any]) -> tuple[Callable[..., tuple], tuple, str | None]:
    """(fn of the differentiable inputs, those inputs in float64, why not applicable)."""
    converted = [a.detach().to(torch.complex128 if a.is_complex() else torch.float64).requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex()) else
                 a.detach() if isinstance(a, torch.Tensor) else a for a in sample]
    diff_idx = _differentiable_indices(converted)
    inputs = tuple(converted[i] for i in diff_idx)

    differentiable_outputs: list[int] = []  # chosen once: forward-AD calls see no requires_grad

    def all_outputs(*diff: torch.Tensor) -> tuple:
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in converted]
        for i, d in zip(diff_idx, diff):
            args[i] = d.clone()  # in-place Functions update the copy, never gradcheck's input
        return _as_tuple(function.apply(*args))

    def fn(*diff: torch.Tensor) -> tuple:
        outs = all_outputs(*diff)
        return tuple(outs[k] for k in differentiable_outputs)

    if not diff_idx:
        return fn, inputs, "no input requires grad"
    elements = sum(t.numel() for t in inputs)
    if elements > GRADCHECK_MAX_ELEMENTS:
        return fn, inputs, (f"too large for finite differences ({elements} > {GRADCHECK_MAX_ELEMENTS} "
                            "differentiable input elements); pass a smaller sample")
    try:
        with torch.enable_grad():
            outs = all_outputs(*inputs)
    except Exception as e:  # noqa: BLE001  the Function's own choice (e.g. a fixed dtype): reported, not passed
        return fn, inputs, f"the Function does not run in float64 ({type(e).__name__}: {e})"
    differentiable_outputs.extend(k for k, o in enumerate(outs) if isinstance(o, torch.Tensor) and o.requires_grad)
    outs = fn(*inputs)
    if not outs:
        return fn, inputs, "no output requires grad"
    wrong = [str(o.dtype) for o in outs if o.dtype not in (torch.float64, torch.complex128)]
    if wrong:
        return fn, inputs, f"the Function returns {', '.join(wrong)} for float64 inputs"
    return fn, inputs, None


_JACOBIAN_MISMATCH = re.compile(r"Jacobian (computed with forward mode )?mismatch for output (\d+) with respect to "
                                r"input (\d+),\s*numerical:(tensor\(.*?\))\s*analytical:(tensor\(.*?\))\s*$", re.DOTALL)


@contextlib.contextmanager
def _tensors_printed_whole() -> Iterator[None]:
    """gradcheck puts both Jacobians in its message: printed whole and exact, they can be read back."""
    opts = torch._tensor_str.PRINT_OPTS
    saved = {"precision": opts.precision, "threshold": opts.threshold, "edgeitems": opts.edgeitems,
             "linewidth": opts.linewidth, "sci_mode": opts.sci_mode}
    torch.set_printoptions(precision=17, threshold=2**62, linewidth=2**30)
    try:
        yield
    finally:
        torch.set_printoptions(**saved)


def _largest_jacobian_error(message: str, differentiated: str) -> str | None:
    """gradcheck's Jacobian mismatch as one line: the entry that differs most, with its output,
    input and (flat) element indices, instead of both whole Jacobians."""
    found = _JACOBIAN_MISMATCH.search(message.split("\n\n")[0] + "\n")
    if found is None:
        return None
    names = {"tensor": torch.tensor, "torch": torch, "inf": float("inf"), "nan": float("nan")}
    numerical, analytical = (eval(text, names) for text in found.group(4, 5))  # torch's own repr, printed above
    error = (analytical - numerical).abs().nan_to_num(nan=float("inf"))
    row, col = divmod(int(error.argmax()), error.shape[1])  # gradcheck's layout: (input elements, output elements)
    which = "forward AD (the jvp)" if found.group(1) else differentiated
    wrong = int((~torch.isclose(analytical, numerical, rtol=1e-3, atol=1e-5)).sum())
    return (f"d output {found.group(2)}[{col}] / d input {found.group(3)}[{row}] (flat indices): {which} gives "
            f"{float(analytical[row, col]):.6g}, finite differences {float(numerical[row, col]):.6g} "
            f"({wrong} of {error.numel()} Jacobian entries differ beyond gradcheck's rtol=1e-3, atol=1e-5)")


def _run_oracle(run: Callable[[], Any], differentiated: str = "backward") -> tuple[str, str]:
    from torch.autograd.gradcheck import GradcheckError

    try:
        with _tensors_printed_whole():
            run()
    except GradcheckError as e:
        return "failed", _largest_jacobian_error(str(e), differentiated) or " ".join(str(e).split("\n\n")[0].split())
    except RuntimeError as e:
        incompatible = documented_incompatibility(e)
        if incompatible is not None:
            return "unsupported", incompatible
        return "failed", f"raised {type(e).__name__}: {e}"
    return "passed", ""


def _gradcheck(function: type, sample: Sequence[Any]) -> tuple[str, str]:
    fn, inputs, why = _float64_function(function, sample)
    if why is not None:
        return "not_applicable", why
    # slow mode: see harness.oracles.math for fast mode's false failures with non-differentiable outputs
    return _run_oracle(lambda: torch.autograd.gradcheck(fn, inputs, fast_mode=False, check_backward_ad=True,
                                                        check_forward_ad=False, check_batched_grad=False))


def _gradcheck_forward_ad(function: type, sample: Sequence[Any]) -> tuple[str, str]:
    why = _jvp_not_applicable(function, sample)
    fn, inputs, why = (None, (), why) if why is not None else _float64_function(function, sample)
    if why is not None:
        return "not_applicable", why
    return _run_oracle(lambda: torch.autograd.gradcheck(fn, inputs, fast_mode=False, check_backward_ad=False,
                                                        check_forward_ad=True, check_undefined_grad=False,
                                                        check_batched_grad=False))


def _gradgradcheck(function: type, sample: Sequence[Any]) -> tuple[str, str]:
    why = _double_backward_not_applicable(function, sample)
    fn, inputs, why = (None, (), why) if why is not None else _float64_function(function, sample)
    if why is not None:
        return "not_applicable", why
    return _run_oracle(lambda: torch.autograd.gradgradcheck(fn, inputs, fast_mode=False),
                       "double backward (indices of gradgradcheck's function: inputs then grad_outputs)")


# --- vmap ----------------------------------------------------------------------------------


def _batch_element(sample: Sequence[Any], b: int) -> list[Any]:
    """Element b of the vmap batch: every tensor's values rolled by b positions. Each value
    stays in the sample's domain, and arguments of one shape stay aligned element by element."""
    return [a.detach().flatten().roll(b).view_as(a).clone().requires_grad_(a.requires_grad)
            if isinstance(a, torch.Tensor) else a for a in sample]


def _check_vmap(function: type, sample: Sequence[Any]) -> tuple[str, str]:
    if not has_vmap_rule(function):
        return "not_applicable", f"{function.__name__} has no vmap staticmethod and no generate_vmap_rule"
    tensor_idx = _tensor_indices(sample)
    if not tensor_idx:
        return "not_applicable", "no tensor argument to batch"
    elements = [_batch_element(sample, b) for b in range(VMAP_BATCH)]
    batched = [torch.stack([e[i] for e in elements]) if i in tensor_idx else a for i, a in enumerate(sample)]
    in_dims = tuple(0 if i in tensor_idx else None for i in range(len(sample)))

    def tensor_outputs(*args: Any) -> tuple:
        # copies: an in-place Function updates them, never the batch or its leaves
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        return tuple(o for o in _as_tuple(function.apply(*copies)) if isinstance(o, torch.Tensor))

    expected, actual = RunResult("loop"), RunResult(VMAP)
    try:
        with torch.no_grad():
            looped = [tensor_outputs(*e) for e in elements]
            mapped = torch.vmap(tensor_outputs, in_dims=in_dims)(*[_detached(a) for a in batched])
    except RuntimeError as e:
        return "failed", f"torch.vmap raised {type(e).__name__}: {e}"
    for k in range(len(looped[0])):
        for b in range(VMAP_BATCH):
            expected.put("forward", f"out:{k}[{b}]", looped[b][k])
            actual.put("forward", f"out:{k}[{b}]", mapped[k][b])
    diff_idx = _differentiable_indices(sample)
    diff_out = [k for k, o in enumerate(tensor_outputs(*elements[0])) if o.requires_grad] if diff_idx else []
    if diff_out:
        cotangents = _weights([looped[0][k] for k in diff_out], 1_000_003)

        def per_sample_grads(*args: Any) -> tuple:
            def differentiable(*diff: torch.Tensor) -> tuple:
                full = list(args)
                for i, d in zip(diff_idx, diff):
                    full[i] = d
                outs = tensor_outputs(*full)
                return tuple(outs[k] for k in diff_out)
            _, pullback = torch.func.vjp(differentiable, *[args[i] for i in diff_idx])
            return pullback(tuple(cotangents))
        try:
            looped_grads = [per_sample_grads(*e) for e in elements]
            mapped_grads = torch.vmap(per_sample_grads, in_dims=in_dims)(*batched)
        except RuntimeError as e:
            return "failed", f"per-sample gradients (torch.func.vjp under torch.vmap) raised {type(e).__name__}: {e}"
        for j, i in enumerate(diff_idx):
            for b in range(VMAP_BATCH):
                expected.put("backward", f"grad:x{i}[{b}]", looped_grads[b][j])
                actual.put("backward", f"grad:x{i}[{b}]", mapped_grads[j][b])
    mismatches = compare(expected, actual, _DtypeTolerances(expected))
    if mismatches:
        return "failed", "; ".join(_mismatch_text(m) for m in mismatches) + " (torch.vmap vs a loop over the batch)"
    return "passed", "outputs" + (" and per-sample gradients" if diff_out else "")


def _detached(a: Any) -> Any:
    return a.detach() if isinstance(a, torch.Tensor) else a


# --- reproducers ---------------------------------------------------------------------------


def _literal(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        on = "" if value.device.type == "cpu" else f", device={str(value.device)!r}"
        return f"torch.tensor({t.tolist()!r}, dtype={t.dtype}{on})" + (".requires_grad_()" if value.requires_grad else "")
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) else f"[{inner}]"
    return repr(value)


def _import_or_source(function: type) -> str:
    """How the reproducer gets the Function: an import when it can be imported, else its source."""
    module, qualname = function.__module__, function.__qualname__
    if module != "__main__" and "<locals>" not in qualname and "." not in qualname:
        return f"from {module} import {qualname}"
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return f"# {module}.{qualname} can be neither imported nor read: define it here\n"
    lines = source.splitlines()
    indent = len(lines[0]) - len(lines[0].lstrip())
    return "# the Function, copied from its source (it cannot be imported)\n" + "\n".join(
        line[indent:] for line in lines)


def reproducer(function: type, sample: Sequence[Any], checks: Sequence[str], paths: Sequence[str],
               device: str | None, summary: str) -> str:
    """A standalone script: re-runs exactly these checks on this sample; exits 1 while they fail."""
    runs = [p for p in paths if p not in (FLOAT64, VMAP)] or ["eager"]
    summary = summary.replace('"""', "'''")
    return f'''#!/usr/bin/env python3
"""Reproducer written by harness.check_function (torch {torch.__version__}).

{summary}
"""
import sys

import torch
from torch import inf, nan  # noqa: F401  (tensor literals may use them)

from harness.function_check import FunctionCheckError, check_function

{_import_or_source(function)}

SAMPLE = ({", ".join(_literal(a) for a in sample)},)

try:
    check_function({function.__name__}, [SAMPLE], paths={runs!r}, checks={list(checks)!r}, device={device!r})
except FunctionCheckError as error:
    print(error)
    sys.exit(1)
print("did not reproduce")
'''


# --- the entry point ---------------------------------------------------------------------


def _selected_checks(checks: Iterable[str] | None) -> tuple[str, ...]:
    chosen = tuple(CHECKS if checks is None else checks)
    unknown = [c for c in chosen if c not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check {unknown[0]!r}; valid checks: {', '.join(CHECKS)}.")
    return chosen


def _samples_of(samples: Any) -> Any:
    """A Hypothesis strategy as is; a callable is called; anything else is a list of samples
    (each a tuple of arguments; a lone tensor is a one-argument sample)."""
    from hypothesis.strategies import SearchStrategy

    if callable(samples) and not isinstance(samples, SearchStrategy):
        samples = samples()
    if isinstance(samples, SearchStrategy):
        return samples
    out = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in samples]
    if not out:
        raise ValueError("samples is empty; give at least one tuple of arguments.")
    return out


def check_function(function: type, samples: Any, *, paths: Iterable[str] | None = None,
                   device: str | torch.device | None = None, checks: Iterable[str] | None = None,
                   max_examples: int | None = None, raise_on_failure: bool = True) -> FunctionReport:
    """Run `function` (a torch.autograd.Function subclass) through every path and every check.

    samples: tuples of arguments (tensors, with or without requires_grad, and any other
    values), a callable returning them, or a Hypothesis strategy of such tuples (then this is
    a property test of `max_examples` examples, or the active profile's, and a failure shrinks).
    paths: path names of the harness registry (default: every one; those that cannot run here
    are reported as unsupported with the reason). device: where tensors are moved (default:
    where they are). checks: a subset of CHECKS (default: all).

    Returns a FunctionReport. When a check fails, raises FunctionCheckError listing every
    failed check with a standalone reproducer; when none failed but a path or a check asked for
    judged nothing (`FunctionReport.unchecked`), raises NothingChecked (neither with
    raise_on_failure=False).
    """
    __tracebackhide__ = True  # pytest shows the error, not this frame
    if not (isinstance(function, type) and issubclass(function, torch.autograd.Function)):
        raise TypeError(f"check_function needs a torch.autograd.Function subclass, got {function!r}.")
    paths = None if paths is None else list(paths)
    runnable, unavailable = _paths(paths)
    options = _Options(runnable, unavailable, _selected_checks(checks),
                       None if device is None else torch.device(device))
    # asked for: the paths named, or every one that runs here (the default)
    report = FunctionReport(function.__qualname__,
                            paths=[p.name for p in runnable] if paths is None else _asked_paths(paths),
                            checks_asked=None if checks is None else options.checks)
    given = _samples_of(samples)
    if isinstance(given, list):
        for index, sample in enumerate(given):
            report.samples.append(sample)
            report.records += _check_sample(function, sample, index, options)
        if report.failures and raise_on_failure:
            raise _error(function, report, options)
    else:
        _property(function, given, options, report, max_examples)
    if report.unchecked() and raise_on_failure:
        raise NothingChecked(report)
    return report


def _asked_paths(names: Iterable[str]) -> list[str]:
    """The paths named, as the runners and the records name them (a family name resolved to its mode)."""
    from harness import paths as registry

    resolved = []
    for name in names:
        path = registry.get(name)
        resolved.append((path.resolved() if hasattr(path, "resolved") else path).name)
    return resolved


def _property(function: type, strategy: Any, options: _Options, report: FunctionReport,
              max_examples: int | None) -> None:
    from hypothesis import HealthCheck, given, settings

    __tracebackhide__ = True
    overrides: dict[str, Any] = {
        "deadline": None, "report_multiple_bugs": False, "print_blob": False,
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
        # one test body serves every Function: replaying one Function's saved failure on
        # another would only mislead
        "database": None}
    if max_examples is not None:
        overrides["max_examples"] = max_examples

    @settings(**overrides)
    @given(strategy)
    def sample_passes_every_check(sample: Any) -> None:
        sample = tuple(sample) if isinstance(sample, (tuple, list)) else (sample,)
        one = FunctionReport(report.function, samples=[sample])
        one.records = _check_sample(function, sample, 0, options)
        report.samples.append(sample)
        report.records += [dataclasses.replace(r, sample=len(report.samples) - 1) for r in one.records]
        if one.failures:
            raise _error(function, one, options)

    sample_passes_every_check()


def _error(function: type, report: FunctionReport, options: _Options) -> FunctionCheckError:
    device = None if options.device is None else str(options.device)
    by_check: dict[str, list[CheckRecord]] = {}
    for r in report.failures:
        by_check.setdefault(r.check, []).append(r)
    reproducers = {}
    for check, failed in by_check.items():
        sample = report.samples[failed[0].sample]
        summary = "\n".join(f"{r.check} [{r.path}]: {r.detail}" for r in failed if r.sample == failed[0].sample)
        paths = list(dict.fromkeys(r.path for r in failed if r.sample == failed[0].sample))
        reproducers[check] = reproducer(function, sample, [check], paths, device, summary)
    return FunctionCheckError(report, reproducers)


__all__ = ["CHECKS", "CheckRecord", "FunctionCheckError", "FunctionReport", "NothingChecked", "check_function", "dtype_tolerance",
           "has_jvp", "has_vmap_rule", "is_once_differentiable", "observe", "reproducer"]
