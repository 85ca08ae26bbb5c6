"""The twin-form oracle: the same graph with its Functions written in another form.

torch offers several equivalent ways to write one custom Function: `forward(ctx, ...)` or
`forward` plus `setup_context`, `backward` or its alias `vjp`, one output or a 1-tuple,
`@once_differentiable` for a first-order backward, `ctx.set_materialize_grads(False)` with
a backward that handles None. A path that handles one form wrongly is found by the other
oracles only where the generator happened to write that form *and* eager or the math
oracle disagree with the path. The twin oracle makes, for each example, one twin graph in
which one pair's form is flipped in every Function it applies to (`twin_of`), runs it on
every selected path (eager included; not the math oracle nor gradcheck: that is the cost it
saves) and compares twin[path] with original[path] with the tolerance check.py uses
between that path and eager. A path that differs from its own twin fails, the cause naming
the pair ("vs twin style").

One pair per example, every applicable Function flipped: the pair is chosen from a hash of
the spec (`choose`), so an example always gets the same twin (a reproducer, a resumed
campaign and the shrinker see what the campaign saw); shrinking forces the pair its cause
names (`pair_of_cause`). Flipping every Function, rather than one, keeps the twin the same
size as the example and makes both forms of the pair meet each path in most graphs.

Adding a pair is one row of PAIRS (name, what it is, per-Function transform, how a flip
reads, and optionally the paths and backward modes it runs on); where torch
documents that the two forms are *not* equivalent on some path, a row of
DECLARED_EXCEPTIONS (with the source in torch) keeps the twin from being compared there.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from harness import known_issues, plain
from harness import paths as path_registry
from harness.build import BuiltGraph, build
from harness.oracles.compare import EXACT, Mismatch, Tolerance, Tolerances, against_eager
from harness.oracles.lifetimes import tracking_lifetimes
from harness.oracles.metadata import metadata_mismatches, without_metadata
from harness.run import GRADIENT_ROLES, META, RunResult
from harness.spec import FunctionSpec, GraphSpec, as_custom_op, custom_op_limit, with_user_vmap_rule

if TYPE_CHECKING:
    from harness.paths import Path

#: FunctionSpec -> the same Function in the pair's other form, or None where it does not apply
Transform = Callable[[FunctionSpec], "FunctionSpec | None"]


@dataclass(frozen=True)
class Pair:
    name: str
    #: what the two forms are, in words (reports, docs/twins.md)
    forms: str
    transform: Transform
    #: how one Function's flip reads in a report: "old->setup_context"
    flip: Callable[[FunctionSpec, FunctionSpec], str]
    #: where the pair is run at all: path names or families (harness.known_issues.path_family),
    #: "*" for every path; the spec's backward modes, () for all. Where torch documents the two
    #: forms as different, that is a DECLARED_EXCEPTIONS row instead, with its source
    paths: tuple[str, ...] = ("*",)
    backward_modes: tuple[str, ...] = ()
    #: paths or families on which the two forms differ only in code the path runs exactly as eager
    #: runs it, with what it compiles the same for both: there the twin's run is the original's
    #: wherever eager's twin agreed with eager, so it is not run again (unsupported, counted "as eager"; on the
    #: check's own device only: eager's run there is what the path's eager parts repeat)
    as_eager_on: tuple[str, ...] = ()
    #: why that holds, in words (the reason counted with the status)
    as_eager_because: str = ""
    #: the checkpoints where the two forms differ, as torch documents, in whether a gradient that only
    #: undefined gradients reach is None or a tensor of zeros: there a gradient None on one side and
    #: all zeros on the other is the same (its strides with it); a nonzero one against None differs
    zeros_for_none: tuple[str, ...] = ()

    def runs_on(self, path: str, spec: GraphSpec) -> bool:
        return ((not self.backward_modes or spec.backward in self.backward_modes)
                and ("*" in self.paths or _in_family(path, self.paths)))


def _field_flip(name: str) -> Callable[[FunctionSpec, FunctionSpec], str]:
    return lambda before, after: f"{getattr(before, name)}->{getattr(after, name)}"


def _style(fn: FunctionSpec) -> FunctionSpec | None:
    if fn.style == "setup_context":
        # generate_vmap_rule needs setup_context (spec validation, torch/autograd/function.py), and
        # so does a default torch fills in (keyword_default: the C++ apply of forward(ctx, ...) fills in none)
        return None if fn.vmap or fn.keyword_default else replace(fn, style="old")
    outputs = {o.kind for o in fn.outputs}
    # what torch refuses once setup_context is overridden (harness/spec.py _validate_function):
    # saving a dirty input returned as-is, saving (or saving for forward) an input returned as-is
    if "dirty" in outputs and "outputs" in fn.save:
        return None
    if "input" in outputs and (not set(fn.save) <= {"intermediates"} or fn.jvp and fn.nonlinear_slots):
        return None
    return replace(fn, style="setup_context")


def _backward_method(fn: FunctionSpec) -> FunctionSpec:
    return replace(fn, backward_method="vjp" if fn.backward_method == "backward" else "backward")


def _tuple_output(fn: FunctionSpec) -> FunctionSpec | None:
    return replace(fn, tuple_output=not fn.tuple_output) if len(fn.outputs) == 1 else None


def _once_differentiable(fn: FunctionSpec) -> FunctionSpec:
    return replace(fn, once_differentiable=not fn.once_differentiable)


def _materialize_grads(fn: FunctionSpec) -> FunctionSpec:
    # both backwards handle a None gradient (generic._backward skips it; plain.py writes
    # `if g<k> is not None:` under materialize_grads=False), so the math is the same
    return replace(fn, materialize_grads=not fn.materialize_grads)


def _api(fn: FunctionSpec) -> FunctionSpec | None:
    # to a custom_op where harness.spec.custom_op_limit allows it (it also takes the forms a
    # custom_op has no choice of: setup_context, a backward method); back is always possible
    return as_custom_op(fn) if fn.api == "function" else replace(fn, api="function")


def _vmap_rule(fn: FunctionSpec) -> FunctionSpec | None:
    return with_user_vmap_rule(fn) if fn.vmap_rule == "generate" else replace(fn, vmap_rule="generate")


#: why the twin of a pair whose forms differ only in the forward is not run again on compiled autograd
_FORWARD_ONLY_ON_COMPILED = ("the forms differ only in the forward and its jvp, which run eagerly here as on eager "
                             "(where the twin agreed), and give the same backward graph to compile")

PAIRS: tuple[Pair, ...] = (
    # compiled autograd: Function.apply makes the same node (class, saved tensors, backward) from both
    # forms, so the captured backward graph is the same: measured, 21 of 21 drawn graphs with a backward
    # (docs/twins.md)
    Pair("style", "forward(ctx, ...) (old) vs forward(...) + setup_context", _style, _field_flip("style"),
         as_eager_on=("compiled",), as_eager_because=_FORWARD_ONLY_ON_COMPILED),
    Pair("backward_method", "the formula defined as backward vs as vjp (torch's alias)", _backward_method,
         _field_flip("backward_method")),
    # compiled autograd: the forward (and forward AD) run eagerly, as on eager; the flip changes only
    # how forward, setup_context and jvp return or unpack the output (generic.py, plain.py), and
    # Function.apply makes the same node for a lone output as for a 1-tuple, so the backward graph
    # compiled autograd captures (node, saved tensors, backward code) is the same for both forms
    Pair("tuple_output", "one output returned alone vs as a 1-tuple", _tuple_output,
         lambda before, after: "single->1-tuple" if after.tuple_output else "1-tuple->single",
         as_eager_on=("compiled",), as_eager_because=_FORWARD_ONLY_ON_COMPILED),
    Pair("once_differentiable", "backward with @once_differentiable vs without (first-order gradients)",
         _once_differentiable, lambda before, after: "on" if after.once_differentiable else "off"),
    # set_materialize_grads (torch/autograd/function.py, FunctionCtx): "If True, undefined grad tensors
    # will be expanded to tensors full of zeros prior to calling the backward and jvp methods": where
    # the other form's backward skips a None, this one returns zeros for the inputs it reaches. In a
    # double backward a Function's node runs again for the outputs the first backward's graph used,
    # the others undefined (seen: a dirty output's). At the first backward (the loss reads every
    # output that requires grad) a zero gradient turned None stays a difference: a path's fault.
    Pair("materialize_grads", "ctx.set_materialize_grads(False), a backward handling None, vs the default",
         _materialize_grads, _field_flip("materialize_grads"), zeros_for_none=("double_backward",)),
    Pair("api", "an autograd.Function vs torch.library.custom_op + register_autograd (+ register_vmap) with "
                "the same math (harness/custom_op.py)", _api, _field_flip("api")),
    # only the torch.func paths run a vmap rule at all
    Pair("vmap_rule", "generate_vmap_rule = True vs a hand-written vmap staticmethod", _vmap_rule,
         _field_flip("vmap_rule"), paths=("func", "func+dynamo")),
)
PAIR_NAMES = tuple(p.name for p in PAIRS)


@dataclass(frozen=True)
class DeclaredException:
    """Where torch documents the two forms of a pair as not equivalent: the twin is not
    compared there (and not counted as checked)."""

    pair: str
    #: path names or families (harness.known_issues.path_family: "func", "func+dynamo",
    #: "compiled", ...), or "*" for every path
    paths: tuple[str, ...]
    #: the spec's backward modes it covers; () for all
    backward_modes: tuple[str, ...]
    reason: str
    source: str

    def covers(self, pair: str, path: str, spec: GraphSpec) -> bool:
        return (pair == self.pair and ("*" in self.paths or _in_family(path, self.paths))
                and (not self.backward_modes or spec.backward in self.backward_modes))


def _in_family(path: str, names: tuple[str, ...]) -> bool:
    """`path` ("dynamo:aot_eager", "func.grad+dynamo", "owned@cuda") is one of `names` or of their families."""
    return bool({path.partition("@")[0], path.partition("@")[0].partition(":")[0],
                 known_issues.path_family(path)} & set(names))


DECLARED_EXCEPTIONS: tuple[DeclaredException, ...] = (
    DeclaredException(
        "once_differentiable", ("*",), ("double",),
        "a once_differentiable backward cannot be differentiated again: double backward raises",
        "torch/autograd/function.py, once_differentiable: its outputs point to a DelayedError "
        "\"trying to differentiate twice a function that was marked with @once_differentiable\""),
    DeclaredException(
        "style", ("func", "func+dynamo"), (),
        "torch.func transforms refuse a Function without setup_context (the path reports the old-style "
        "side unsupported)",
        "torch/autograd/function.py, Function.apply: \"In order to use an autograd.Function with functorch "
        "transforms (vmap, grad, jvp, jacrev, ...), it must override the setup_context staticmethod\""),
)


def exception_for(pair: str, path: str, spec: GraphSpec) -> DeclaredException | None:
    return next((e for e in DECLARED_EXCEPTIONS if e.covers(pair, path, spec)), None)


def not_compared_on(pair: Pair, path: str, spec: GraphSpec) -> str | None:
    """Why the pair's twin is not compared on `path` (its scope, or a declared exception), or None."""
    if not pair.runs_on(path, spec):
        return f"the pair {pair.name} does not run on {path}"
    exception = exception_for(pair.name, path, spec)
    return None if exception is None else exception.reason


def _pair(name: str) -> Pair:
    for p in PAIRS:
        if p.name == name:
            return p
    raise ValueError(f"no twin pair {name!r}; choose one of {', '.join(PAIR_NAMES)}.")


@dataclass(frozen=True)
class Twin:
    pair: Pair
    spec: GraphSpec
    #: "F0 old->setup_context, F2 setup_context->old": what was flipped
    flips: str

    @property
    def label(self) -> str:
        return f"twin {self.pair.name} ({self.flips})"


def twin_of(spec: GraphSpec, pair: Pair | str) -> Twin | None:
    """The twin of `spec` with `pair`'s form flipped in every Function it applies to; None
    where it applies to none, or where a declared exception covers every path (the whole
    backward mode). The twin is a valid GraphSpec (validated on construction)."""
    pair = _pair(pair) if isinstance(pair, str) else pair
    flipped = _flipped(spec, pair)
    if flipped is None:
        return None
    functions, flips = flipped
    return Twin(pair, dataclasses.replace(spec, functions=functions), ", ".join(flips))


def _flipped(spec: GraphSpec, pair: Pair) -> tuple[tuple[FunctionSpec, ...], list[str]] | None:
    """The twin's Functions and the flips in words, or None (twin_of); no GraphSpec is made, so
    `choose` can weigh every pair for the cost of one."""
    if (pair.backward_modes and spec.backward not in pair.backward_modes
            or any(e.covers(pair.name, "*", spec) for e in DECLARED_EXCEPTIONS if "*" in e.paths)):
        return None
    functions, flips = [], []
    for n, fn in enumerate(spec.functions):
        flipped = pair.transform(fn)
        if flipped is not None and flipped.api == "custom_op" and custom_op_limit(flipped) is not None:
            flipped = None  # a form a custom_op has no choice of (old style, a vjp method, ...)
        if flipped is None or flipped == fn:
            functions.append(fn)
        else:
            functions.append(flipped)
            flips.append(f"F{n} {pair.flip(fn, flipped)}")
    return (tuple(functions), flips) if flips else None


def choose(spec: GraphSpec, path_names: list[str], forced: str | None = None) -> Twin | None:
    """The example's twin: `forced`'s pair, or one of the pairs that change some Function and
    may be compared on some selected path, chosen by a hash of the spec (deterministic)."""
    if forced is not None:
        return twin_of(spec, forced)
    applicable = [p for p in PAIRS if any(not_compared_on(p, name, spec) is None for name in path_names)
                  and _flipped(spec, p) is not None]
    if not applicable:
        return None
    # repr: a deterministic text of the whole spec, cheaper than its JSON (hash() of it is salted per process)
    index = zlib.crc32(repr(spec).encode()) % len(applicable)
    return twin_of(spec, applicable[index])


def pair_of_cause(cause: str) -> str | None:
    """The pair a failure cause (records.cause_of) names: "mismatch vs twin style at ..." -> "style"."""
    marker = " vs twin "
    if marker not in cause:
        return None
    name = cause.split(marker, 1)[1].split(" ", 1)[0]
    return name if name in PAIR_NAMES else None


# --- running and comparing -------------------------------------------------------------

#: a path-example is checked where the twin was compared with the original: ok or failed
#: (statuses as every check names them, harness.check.STATUSES)
CHECKED = ("ok", "failed")
#: why an `unsupported` path-example was not compared: a DECLARED_EXCEPTIONS row (or the pair's
#: scope); Pair.as_eager_on (the twin's run there would be the original's, since eager's twin
#: agreed: not run); or either side's run was unsupported
NOT_COMPARED = ("excepted", "as eager", "unsupported")


@dataclass
class TwinPathResult:
    #: ok | failed | known (a known torch issue explained every difference) | unsupported
    #: (not compared: `not_compared` says which way)
    status: str
    detail: str = ""
    mismatches: list[Mismatch] = field(default_factory=list)
    known: tuple[str, ...] = ()
    not_compared: str = ""  # one of NOT_COMPARED, where unsupported

    @property
    def counted_as(self) -> str:
        """The status a summary counts it under: unsupported ones by why."""
        return self.not_compared if self.status == "unsupported" else self.status


@dataclass
class TwinCheck:
    twin: Twin
    paths: dict[str, TwinPathResult]

    @property
    def pair(self) -> str:
        return self.twin.pair.name

    def as_record(self) -> dict:
        """What an example record keeps of it (harness.campaign counts per pair from it)."""
        return {"pair": self.pair, "flips": self.twin.flips,
                "paths": {name: r.counted_as for name, r in self.paths.items()}}


def check_twin(spec: GraphSpec, paths: list[Path], device: str, results: dict[str, RunResult],
               mismatches: dict[str, list[Mismatch]], tol: Tolerances, *, forced: str | None = None
               ) -> TwinCheck | None:
    """Run the example's twin on eager and each selected path and compare it with the
    original's results there (`results`, by path name; `mismatches`: the original's own
    mismatches on each path, which known issues' witnesses read). None: no twin applies."""
    twin = choose(spec, [p.name for p in paths], forced)
    if twin is None:
        return None
    built = _built_twin(twin.spec, device)
    outcomes: dict[str, TwinPathResult] = {}
    with tracking_lifetimes(False):  # lifetimes are judged on the original; the twin is about values
        twin_results = {"eager": path_registry.run_path(path_registry.get("eager"), built)}
        eager_agrees = None  # (compared once, where a path needs it)
        for p in paths:
            why_not = not_compared_on(twin.pair, p.name, spec)
            if why_not is not None:
                outcomes[p.name] = TwinPathResult("unsupported", why_not, not_compared="excepted")
            elif results[p.name].status == "unsupported":
                outcomes[p.name] = TwinPathResult("unsupported", f"original: {results[p.name].reason}", not_compared="unsupported")
            elif p.name != "eager" and "@" not in p.name and _in_family(p.name, twin.pair.as_eager_on):
                if eager_agrees is None:
                    eager_agrees = not compare_twins(spec, twin, results["eager"], twin_results["eager"], EXACT)
                if eager_agrees:
                    outcomes[p.name] = TwinPathResult("unsupported", twin.pair.as_eager_because, not_compared="as eager")
                else:
                    twin_results[p.name] = path_registry.run_path(p, built)
            elif p.name != "eager":
                twin_results[p.name] = path_registry.run_path(p, built)
    for p in paths:
        if p.name in outcomes:
            continue
        original, mirrored = results[p.name], twin_results[p.name]
        if mirrored.status == "unsupported":
            outcomes[p.name] = TwinPathResult("unsupported", f"twin: {mirrored.reason}", not_compared="unsupported")
            continue
        path_tol = EXACT if p.exact_vs_eager else tol  # as check.py compares the path with eager
        found = compare_twins(spec, twin, original, mirrored, path_tol)
        outcomes[p.name] = _explained(spec, twin, original, mirrored, found, mismatches.get(p.name, []),
                                      twin_results["eager"], path_tol)
    return TwinCheck(twin, outcomes)


def _built_twin(spec: GraphSpec, device: str) -> BuiltGraph:
    """The twin's Function classes, made from its own spec: a reproducer hands the original's
    plain classes over (plain.PLAIN_CLASSES), which are written in the original's forms."""
    handed, plain.PLAIN_CLASSES = plain.PLAIN_CLASSES, {}
    try:
        return build(spec, device)
    finally:
        plain.PLAIN_CLASSES = handed


def compare_twins(spec: GraphSpec, twin: Twin, original: RunResult, mirrored: RunResult,
                  tol: Tolerance | Tolerances) -> list[Mismatch]:
    """Every difference between a path's run of the example and of its twin: values as
    check.py compares a path with eager (lifetimes aside: the twin runs without them), and
    the metadata that path must share with eager (harness.oracles.metadata)."""
    label = f"twin {twin.pair.name}"
    if twin.pair.zeros_for_none:
        original, mirrored = _zero_gradients_as_none(original, mirrored, twin.pair.zeros_for_none)
    # the twin stands where eager stands for a path: the reference side, named by the pair
    return [replace(m, path=original.path, against=label)
            for m in _differences(spec, original, mirrored, tol, label)]


def _zero_gradients_as_none(a: RunResult, b: RunResult, checkpoints: tuple[str, ...]) -> tuple[RunResult, RunResult]:
    """Both results with each gradient at `checkpoints` that is None on one side and all zeros on the
    other made None on both, and its strides dropped (Pair.zeros_for_none)."""
    same = set()
    for checkpoint in set(a.tensors) & set(b.tensors) & set(checkpoints):
        ours, theirs = a.tensors[checkpoint], b.tensors[checkpoint]
        for role in set(ours) & set(theirs):
            x, y = ours[role], theirs[role]
            if role.startswith(GRADIENT_ROLES) and (x is None) != (y is None) and not bool(
                    ((x if y is None else y) != 0).any()):
                same.add((checkpoint, role))
    if not same:
        return a, b
    strides = {(META + checkpoint, f"stride:{role}") for checkpoint, role in same}

    def as_none(r: RunResult) -> RunResult:
        return replace(r, tensors={c: {role: None if (c, role) in same else t for role, t in roles.items()}
                                   for c, roles in r.tensors.items()},
                       values={c: {k: v for k, v in values.items() if (c, k) not in strides}
                               for c, values in r.values.items()})
    return as_none(a), as_none(b)


def _differences(spec: GraphSpec, result: RunResult, reference: RunResult, tol: Tolerance | Tolerances,
                 label: str = "eager") -> list[Mismatch]:
    """`result` against `reference` (called `label`) as check.py compares a path with eager
    (lifetimes aside), and the metadata the two must share (harness.oracles.metadata)."""
    found = against_eager(without_metadata(reference), without_metadata(result), tol, lifetimes=False,
                           reference=label)
    return found + metadata_mismatches(spec, reference, result)


def _as_reference(m: Mismatch, reference: str) -> Mismatch:
    return replace(m, against=reference)


def _explained(spec: GraphSpec, twin: Twin, original: RunResult, mirrored: RunResult, found: list[Mismatch],
               own: list[Mismatch], twin_eager: RunResult, tol: Tolerance | Tolerances) -> TwinPathResult:
    """ok, failed, or known: a known torch issue hit on either side explains only the
    differences it causes (its damage, read as against eager or the math oracle: the twin
    stands where they stand for the path)."""
    if not found:
        return TwinPathResult("ok")
    as_eager = [_as_reference(m, "eager") for m in found]
    original_issues = known_issues.hits(spec, original, own + as_eager)
    # the same differences seen from the twin's side (the original as the reference): a bug of the
    # twin's run is damage read that way round ("expected None" where the twin has zeros)
    from_twin = {(m.checkpoint, m.role): _as_reference(m, "eager") for m in _differences(twin.spec, mirrored, original, tol)}
    twin_side = list(from_twin.values())
    if mirrored.path != "eager":
        twin_side += against_eager(without_metadata(twin_eager), without_metadata(mirrored), tol, lifetimes=False)
    twin_issues = known_issues.hits(twin.spec, mirrored, twin_side)
    issues = tuple(dict.fromkeys(k.id for k in original_issues + twin_issues))

    # an error difference is named at the erring side's checkpoint: seen from the twin, at the twin's
    errors_from_twin = [d for (_, role), d in from_twin.items() if role == "error"]

    def explained(m: Mismatch) -> bool:
        seen_from_twin = from_twin.get((m.checkpoint, m.role)) or (
            errors_from_twin[0] if m.role == "error" and errors_from_twin else None)
        return any(known_issues.explained(spec, original_issues, _as_reference(m, ref))
                   or seen_from_twin is not None
                   and known_issues.explained(twin.spec, twin_issues, _as_reference(seen_from_twin, ref))
                   for ref in ("eager", "math"))
    unexplained = [m for m in found if not explained(m)]
    if not unexplained:
        return TwinPathResult("known", ", ".join(issues), found, issues)
    where = "; ".join(dict.fromkeys(f"at {m.checkpoint}" for m in unexplained))
    beside = f" (beside known torch issue {', '.join(issues)})" if issues else ""
    return TwinPathResult("failed", f"{twin.label} differs on {original.path}: {where}{beside}", unexplained, issues)


__all__ = ["CHECKED", "DECLARED_EXCEPTIONS", "PAIRS", "PAIR_NAMES", "DeclaredException", "Pair", "Twin",
           "NOT_COMPARED", "TwinCheck", "TwinPathResult", "check_twin", "choose", "compare_twins", "exception_for",
           "not_compared_on",
           "pair_of_cause", "twin_of"]
