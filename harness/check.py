"""One check for every subject: `check(subject, paths, device, policy=...)`.

A subject is a generated graph (a GraphSpec, what campaigns fuzz) or a user's own Function with
one sample of its arguments (a `FunctionSample`, a one-node subject: what check_function checks).
Every registered path runs it unchanged, eager is the reference, and every result ends in one word
of one vocabulary (STATUSES, docs/statuses.md). A `Policy` carries what differs between the two:
the float64 reference eager is judged by, how a compiling path's values are compared with eager's,
the gradcheck limit, and which known torch issues can explain a difference.

A graph: one example through every selected path, judged against eager and the math oracle.

A known torch issue (harness/known_issues/) explains only the mismatches it causes: a
path is `known` when an entry's trigger holds, its witness is seen and every mismatch is
its damage. Then the entry's workaround variant of the spec is checked on that path, so
the rest of the example is still tested there: the outcome is that variant's ok/failed,
with the known issue named beside it. Any mismatch no entry explains fails the path.

With `twins`, the example's twin (its Functions written in another equivalent form,
harness/oracles/twins.py) runs on every path too, and a path that differs from its twin fails.
"""

from __future__ import annotations

import contextlib
import inspect
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

from torch.autograd.gradcheck import GradcheckError

from harness import known_issues
from harness import paths as path_registry
from harness.build import build
from harness.dataflow import version_error_expected
from harness.oracles.bounds import error_bounds
from harness.function_run import (RUN_SPECS, NotRun, PathRun, double_backward_not_applicable, jvp_not_applicable,
                                  observe, observe_on)
from harness.oracles import function_math
from harness.oracles.function_math import FUNCTION_GRADCHECK_ELEMENTS
from harness.oracles.compare import (EXACT, DtypeTolerances, Mismatch, Tolerances, Uncompared, against_eager,
                                     compare)
from harness.oracles.lifetimes import (LIFE, PROBE, held_by, in_words, rule_violations, tracking_lifetimes,
                                       with_holders, without_lifetimes)
from harness.oracles.math import (CAMPAIGN_GRADCHECK_ELEMENTS, GradcheckRaised, completed, error_is_expected,
                                  gradcheck_graph, gradcheck_reason, run_math)
from harness.oracles.metadata import metadata_mismatches, without_metadata
from harness.oracles import twins as twin_oracle
from harness.oracles.twins import TwinCheck
from harness.paths import Path
from harness.run import CHECKPOINTS, RunResult
from harness.spec import GraphSpec
from harness.stages import whole_stage
from harness.stages import stage as _stage

#: a workaround variant may hit another known issue, whose workaround is checked in turn (compiled
#: autograd examples meet four or five issues in about 2% of examples: at 3 those went unchecked)
MAX_WORKAROUNDS = 6


@dataclass(frozen=True)
class Policy:
    """What differs between checking a generated graph and a user's Function; the paths, the
    comparisons with eager, the known-issue rule (an entry explains only the damage it causes) and
    the statuses are the same."""

    name: str
    #: what judges eager's own run, in words
    reference: str
    #: finite differences (gradcheck) only up to this many differentiable input elements
    gradcheck_elements: int
    #: a compiling path's values against eager's, given what they are compared on (the built graph:
    #: its float64 error bounds, per element and op; eager's run of a user's Function: torch.testing's
    #: per-dtype defaults, nothing being known of the user's ops). Paths that run eager's own code
    #: compare exactly under both (Path.exact_vs_eager)
    tolerances: Callable[[Any], Tolerances | DtypeTolerances]
    #: the registry entries a path's run and its differences hit: (spec or None, result, mismatches)
    known_hits: Callable[[GraphSpec | None, RunResult, list[Mismatch]], list]


#: campaigns: a generated graph, judged by its math oracle, every registry entry matched on its spec
GRAPH = Policy(
    "graph", "the math oracle (the same ops by plain autograd, float64 error bounds)", CAMPAIGN_GRADCHECK_ELEMENTS,
    tolerances=lambda built: Tolerances(lambda: _error_bounds(built)),  # computed where a comparison needs it
    known_hits=known_issues.hits)
#: check_function: a user's Function, judged by float64 gradcheck of its own code; only the entries
#: that need no graph structure can match (`KnownIssue.any_function`)
FUNCTION = Policy(
    "function", "float64 gradcheck, gradgradcheck and vmap of the Function's own code (harness.oracles.function_math)",
    FUNCTION_GRADCHECK_ELEMENTS,
    tolerances=lambda eager: DtypeTolerances(eager),
    known_hits=lambda spec, result, mismatches: known_issues.function_hits(result, mismatches))


@dataclass
class Explanation:
    """A run's mismatches sorted by known torch issues: each issue explains only the mismatches its
    damage names, and any other mismatch stays unexplained (it fails what it belongs to). Both
    judges, a graph's per path and a user's Function's per check, start from this."""

    issues: list  # the KnownIssue entries hit
    unexplained: list[Mismatch]
    #: each explained mismatch with the ids of the issues that explain it
    explained: list[tuple[Mismatch, tuple[str, ...]]]

    @property
    def known(self) -> tuple[str, ...]:
        return tuple(k.id for k in self.issues)


def explain(spec: GraphSpec | None, mismatches: list[Mismatch], issues: list) -> Explanation:
    """`mismatches` sorted by `issues` (spec None: a user's Function, no graph structure)."""
    unexplained, explained = [], []
    for m in mismatches:
        by = tuple(k.id for k in issues if k.damage(spec, m))
        if by:
            explained.append((m, by))
        else:
            unexplained.append(m)
    return Explanation(list(issues), unexplained, explained)


def explain_by_policy(spec: GraphSpec | None, result: RunResult, mismatches: list[Mismatch],
                      policy: Policy) -> Explanation:
    """`mismatches` sorted by the registry entries the policy lets them hit."""
    return explain(spec, mismatches, policy.known_hits(spec, result, mismatches) if mismatches else [])


@dataclass(frozen=True)
class FunctionSample:
    """A user's Function and one sample of its arguments: a one-node subject."""

    function: type
    args: tuple
    #: the checks asked for (CHECKS) and the paths asked for that cannot run here, each with why
    checks: tuple[str, ...] = ()
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass
class SampleVerdict:
    """A FunctionSample's check: one record per check and path (CheckRecord)."""

    subject: FunctionSample
    records: list[CheckRecord]

    @property
    def failed(self) -> list[CheckRecord]:
        return [r for r in self.records if r.status == "failed"]

    def report(self) -> str:
        lines = [f"{r.check} [{r.path}] {r.status}" + (f": {r.detail}" if r.detail else "") for r in self.records]
        return "\n".join(lines) or "nothing ran"


#: the one vocabulary of a path's outcome, a check_function record and a twin's result, most
#: telling first (docs/statuses.md); only ok and failed judged something
STATUSES = ("failed", "ok", "partly", "known", "unsupported")
JUDGED = ("ok", "failed")


@dataclass
class PathOutcome:
    path: str
    #: one of STATUSES. partly: a known issue without a workaround damaged part of the run and the
    #: rest agreed; what it damages was not judged, so the path is not "ok", and not checked either
    status: str
    reason: str = ""  # unsupported: why; failed: a one-line summary; known: the issue ids
    mismatches: list[Mismatch] = field(default_factory=list)
    result: RunResult | None = None
    #: known torch issues hit on this path; their mismatches are explained, not failures
    known: tuple[str, ...] = ()
    #: the spec whose check gave `status`: the example itself, or the workaround variant
    #: checked past the known issues
    checked_spec: GraphSpec | None = None
    #: elements that differ and were not judged (unchecked at this precision, may overflow)
    uncompared: Uncompared = field(default_factory=Uncompared)
    #: known torch issues of eager's own run (also in `known`), each with what it explained here:
    #: the path's results for those roles were not compared with eager's, only with the math oracle's
    eager_known: dict[str, str] = field(default_factory=dict)

    @property
    def checked(self) -> bool:
        """Compared and judged (ok or failed), possibly on the workaround variant. Not partly:
        there what the known issue damages was left unjudged."""
        return self.status in JUDGED

    def unchecked(self) -> str | None:
        """Why this path did not check the example in full, or None when it did (ok or failed)."""
        if self.status in JUDGED:
            return None
        if self.status == "unsupported":
            return f"unsupported: {self.reason}"
        if self.status == "partly":
            return f"partly: what {', '.join(self.known)} damages was left unjudged (no workaround)"
        return f"stopped by known torch issue {', '.join(self.known)}"


@dataclass
class Verdict:
    spec: GraphSpec
    device: str
    outcomes: dict[str, PathOutcome]
    #: the twin-form oracle's comparison (harness/oracles/twins.py), when asked for and a twin applies
    twin: TwinCheck | None = None

    @property
    def failed(self) -> list[PathOutcome]:
        return [o for o in self.outcomes.values() if o.status == "failed"]

    def report(self) -> str:
        lines = []
        for o in self.failed:
            lines.append(f"[{o.path}] {o.reason}")
            lines += [f"    {m}" for m in o.mismatches]
        for o in self.outcomes.values():
            if o.uncompared:
                lines.append(f"[{o.path}] {o.uncompared.describe()}")
        for o in self.outcomes.values():
            own = [k for k in o.known if k not in o.eager_known]
            if own and o.status != "failed":
                past = {"ok": " (the rest checked on its workaround: ok)",
                        "partly": " (no workaround: the rest of the run agreed, what it damages is unchecked)",
                        }.get(o.status, "")
                lines.append(f"[{o.path}] known torch issue {', '.join(own)}{past}")
            lines += [f"[{o.path}] eager's known torch issue {k} explained its difference from eager at {what}: "
                      f"judged against the math oracle alone there" for k, what in o.eager_known.items()]
        unchecked = self.unchecked()
        if unchecked:
            lines.append(nothing_checked_sentence(unchecked))
        return "\n".join(lines) or "all paths agree"

    def unchecked(self) -> dict[str, str]:
        """The paths that did not check the example in full (unsupported, stopped by a known issue,
        or partly), each with why."""
        return {name: why for name, o in self.outcomes.items() if (why := o.unchecked()) is not None}


def nothing_checked_sentence(unchecked: dict[str, str]) -> str:
    """One sentence naming what was not checked, path by path (`Verdict.unchecked`)."""
    return "not checked: " + "; ".join(f"{name} ({why})" for name, why in unchecked.items())


def check(subject: GraphSpec | FunctionSample, paths: list[Path], device: str = "cpu", *,
          policy: Policy | None = None, lifetimes: bool = True, twins: bool | str = False
          ) -> Verdict | SampleVerdict:
    """Run `subject` on each path and judge everything, by `policy` (default: GRAPH for a graph,
    FUNCTION for a user's Function).

    A graph: eager is always run as the reference for other paths, and is itself judged against
    the math oracle. With `lifetimes`, each path's refcounts and liveness are checked against the
    expected-lifetime rules and compared across paths. With `twins` (True, or the name of one pair
    to force it), the example's twin in another Function form runs on every path and must agree
    with it there (harness/oracles/twins.py).

    A user's Function: every check of `subject.checks` on `paths` (eager first) and the float64
    oracles; lifetimes and twins are checks of their own there (`lifetimes` in CHECKS), or do not
    apply. `device` is where the sample already is.
    """
    if isinstance(subject, FunctionSample):
        records: list[CheckRecord] = []
        check_sample(subject, paths, lambda *fields: records.append(CheckRecord(*fields)), policy or FUNCTION)
        return SampleVerdict(subject, records)
    return _check_graph(subject, paths, device, policy or GRAPH, lifetimes, twins, 0)


def _check_graph(spec: GraphSpec, paths: list[Path], device: str, policy: Policy, lifetimes: bool,
                 twins: bool | str, workarounds: int) -> Verdict:
    """A graph's check (`check`); `workarounds`: how many known issues' variants led here."""
    with _stage("build"):
        built = build(spec, device)
    with _stage("math oracle"):
        math = run_math(built)
    tol = policy.tolerances(built)
    with tracking_lifetimes(lifetimes):
        with _stage("path eager"):
            eager = path_registry.run_path(path_registry.get("eager"), built)
        results = {"eager": eager}
        for p in paths:
            if p.name != "eager":
                with _stage(f"path {p.name}"):
                    results[p.name] = path_registry.run_path(p, built)
    outcomes: dict[str, PathOutcome] = {}
    own_mismatches: dict[str, list[Mismatch]] = {}  # each path's, for the twin's known-issue witnesses
    with _stage("compare"):
        # eager judged by the math oracle: once, for eager's own outcome and its known issues
        eager_uncompared = Uncompared()
        eager_vs_math = _against_math(spec, without_metadata(math), without_metadata(eager), tol,
                                      uncompared=eager_uncompared)
        eager_issues = (policy.known_hits(spec, eager, eager_vs_math)
                        if eager_vs_math and any(p.name != "eager" for p in paths) else [])
        for path in paths:
            result = results[path.name]
            if result.status == "unsupported":
                outcomes[path.name] = PathOutcome(path.name, "unsupported", result.reason, result=result,
                                                  checked_spec=spec)
                continue
            no_meta = without_metadata  # metadata is compared per path by metadata_mismatches
            # a path that observes only part of a run (func) narrows the references to that part
            seen = getattr(path, "observed", lambda spec, reference: reference)
            math_seen, eager_seen = seen(spec, math), seen(spec, eager)
            runs_backward = getattr(path, "runs_backward", lambda spec: True)(spec)
            uncompared = eager_uncompared if path.name == "eager" else Uncompared()
            vs_math = (eager_vs_math if path.name == "eager" else
                       _against_math(spec, no_meta(math_seen), no_meta(result), tol, runs_backward, uncompared))
            mismatches = vs_math + _lifetime_rules(spec, result) + metadata_mismatches(spec, math_seen, result)
            if path.name != "eager":
                # roles eager never reached (it raised in a phase the path does not run), and
                # roles a known torch issue damages in eager itself, have no eager reference:
                # the math oracle alone judges them (a path sharing the bug agrees with eager anyway)
                unreached = getattr(path, "unreached", lambda spec, reference: set())(spec, eager)
                vs_eager, eager_known = _explained_by_eager(spec, eager_issues, with_holders(result, against_eager(
                    no_meta(eager_seen), _without_roles(no_meta(result), unreached),
                    EXACT if path.exact_vs_eager else tol, lifetimes=path_registry.lifetimes_vs_eager_on(path, spec),
                    uncompared=uncompared)))
                mismatches += vs_eager + metadata_mismatches(spec, eager_seen, result)
            owned = results.get("owned")
            if path.name == "borrowed" and owned is not None and owned.status != "unsupported":
                mismatches += _owned_vs_borrowed(owned, result)
            own_mismatches[path.name] = mismatches
            outcome = _judge(spec, path, result, mismatches, device, policy, lifetimes, workarounds)
            if outcome.checked_spec is spec:  # (a workaround variant's are its own)
                outcome.uncompared = uncompared
            outcomes[path.name] = _with_eager_known(outcome, eager_known) if path.name != "eager" else outcome
    twin = None
    if twins:
        with _stage("twins"):
            twin = twin_oracle.check_twin(spec, paths, device, results, own_mismatches, tol,
                                          forced=twins if isinstance(twins, str) else None)
        if twin is not None:
            _fold_in_twin(outcomes, twin)
    return Verdict(spec, device, outcomes, twin)


def _fold_in_twin(outcomes: dict[str, PathOutcome], twin_check: TwinCheck) -> None:
    """A path that differs from its twin fails, whatever its own outcome was (a known issue's
    workaround, say): the twin's mismatches come after the path's own."""
    for name, result in twin_check.paths.items():
        if result.status != "failed":
            continue
        o = outcomes[name]
        own = o.mismatches if o.status == "failed" else []
        reason = f"{o.reason}; {result.detail}" if o.status == "failed" else result.detail
        outcomes[name] = replace(o, status="failed", reason=reason, mismatches=own + result.mismatches)


def _explained_by_eager(spec: GraphSpec, eager_issues: list, mismatches: list[Mismatch]
                        ) -> tuple[list[Mismatch], dict[str, str]]:
    """The path-vs-eager mismatches no known issue of eager's own run explains, and each issue that
    explained some with what it explained (those roles have no trustworthy eager reference)."""
    sorted_out = explain(spec, mismatches, eager_issues)
    explained: dict[str, list[str]] = {}
    for m, by in sorted_out.explained:
        for issue in by:
            explained.setdefault(issue, []).append(f"{m.checkpoint} {m.role}")
    return sorted_out.unexplained, {issue: ", ".join(dict.fromkeys(roles)) for issue, roles in explained.items()}


def _with_eager_known(outcome: PathOutcome, eager_known: dict[str, str]) -> PathOutcome:
    """The outcome naming the eager issues that explained its mismatches with eager (recorded, never
    dropped silently), beside those its own check, or its workaround variant's, met."""
    merged = {**outcome.eager_known, **eager_known}
    if not merged:
        return outcome
    return replace(outcome, known=tuple(dict.fromkeys((*outcome.known, *merged))), eager_known=merged)


def _error_bounds(built) -> dict:
    with _stage("error bounds"):
        return error_bounds(built).bounds


def _judge(spec: GraphSpec, path: Path, result: RunResult, mismatches: list[Mismatch], device: str,
           policy: Policy, lifetimes: bool, workarounds: int) -> PathOutcome:
    """ok / failed, or known when known torch issues explain every mismatch (then the
    workaround variant is checked on this path, and its ok / failed is the outcome)."""
    sorted_out = explain_by_policy(spec, result, mismatches, policy)
    issues, known, unexplained = sorted_out.issues, sorted_out.known, sorted_out.unexplained
    if not issues:
        return PathOutcome(path.name, "failed" if mismatches else "ok", _summary_of(mismatches), mismatches,
                           result, checked_spec=spec)
    if unexplained:
        return PathOutcome(path.name, "failed", f"{_summary_of(unexplained)} (beside known torch issue "
                           f"{', '.join(known)})", unexplained, result, known, spec)
    variant = known_issues.workaround(spec, issues)
    if variant == spec and result.status != "error":
        # no spec avoids the bug, but the run completed: every role it did not damage was compared in
        # this very run and agreed, and the roles it damages were not judged: partly checked
        return PathOutcome(path.name, "partly", f"unchecked: what {', '.join(known)} damages (no workaround)"
                           + _holders_text(mismatches), [], result, known, spec)
    if variant == spec or workarounds >= MAX_WORKAROUNDS:
        return PathOutcome(path.name, "known", ", ".join(known), mismatches, result, known, spec)
    # (all of it one stage when profiled: the paths' stages stay the example's own runs)
    with whole_stage("workarounds"):
        past = _check_graph(variant, [path], device, policy, lifetimes, False, workarounds + 1).outcomes[path.name]
    known += tuple(k for k in past.known if k not in known)
    if not past.checked and past.status != "partly":  # nothing past the bug was seen
        return PathOutcome(path.name, "known", ", ".join(known), mismatches, result, known, spec)
    reason = past.reason if past.status in ("ok", "partly") else f"with {', '.join(known)} worked around: {past.reason}"
    return PathOutcome(path.name, past.status, reason, past.mismatches, past.result, known, past.checked_spec,
                       uncompared=past.uncompared, eager_known=past.eager_known)


def _holders_text(mismatches: list[Mismatch]) -> str:
    """The torch objects that held what the lifetime checks found alive, as the release checks
    named them (harness/oracles/holders.py): the evidence a lifetime entry's witness saw."""
    found = sorted(set().union(*(held_by(m) for m in mismatches)))
    return f"; held by {' and '.join(found)}" if found else ""


def _summary_of(mismatches: list[Mismatch]) -> str:
    return "; ".join(dict.fromkeys(_summary(m) for m in mismatches))


def _summary(m: Mismatch) -> str:
    return f"differs from {m.against} at {m.checkpoint}"


def _against_math(spec: GraphSpec, math: RunResult, result: RunResult, tol: Tolerances,
                  runs_backward: bool = True, uncompared: Uncompared | None = None) -> list[Mismatch]:
    """runs_backward=False: the path computes no gradient by a backward (func.jvp, func.jacfwd,
    func.vmap), so torch's version-counter error is not expected of it. uncompared: where the
    elements not judged are counted."""
    if result.status == "error" and not error_is_expected(spec, result):
        return [Mismatch(result.path, "math", result.error_checkpoint, "error",
                         f"raised {result.describe_error()}")]
    if result.status != "error" and runs_backward and version_error_expected(spec) and "backward" in math.tensors:
        return [Mismatch(result.path, "math", "backward", "error",
                         "ran without torch's version-counter error, but a saved tensor was modified in place")]
    if result.status == "error":  # the deliberate error: what ran before it must still agree
        return compare(_without_hooks(completed(math_like(math, result))), _without_hooks(completed(result)),
                       tol, none_is_zero=True, uncompared=uncompared)
    return compare(_without_hooks(math), _without_hooks(result), tol, none_is_zero=True, uncompared=uncompared)


def math_like(math: RunResult, result: RunResult) -> RunResult:
    """The math result cut at the checkpoint where `result` stopped."""
    return replace(math, status=result.status, error_checkpoint=result.error_checkpoint, error=result.error)


def _without_roles(result: RunResult, roles: set[tuple[str, str]]) -> RunResult:
    if not roles:
        return result
    return replace(result, tensors={c: {r: t for r, t in v.items() if (c, r) not in roles}
                                    for c, v in result.tensors.items()})


def _without_hooks(result: RunResult) -> RunResult:
    """What hooks saw depends on graph structure: one custom node versus several plain
    ones, and a None gradient (no hook call) versus the math graph's zeros. So hook
    observations are compared between paths, and the math oracle checks the gradients
    the hooks produced instead."""
    def keep(roles: dict) -> dict:
        return {r: v for r, v in roles.items() if not r.startswith("hook")}
    values = without_lifetimes(result.values, keep_life=False)  # math keeps no lifetimes
    return replace(result, values={c: keep(v) for c, v in values.items()},
                   tensors={c: keep(v) for c, v in result.tensors.items()})


def _lifetime_rules(spec: GraphSpec, result: RunResult) -> list[Mismatch]:
    with _stage("lifetimes"):
        return [Mismatch(result.path, "lifetime rule", v.checkpoint, v.role, v.detail)
                for v in rule_violations(result, spec.backward,
                                         any(h.kind == "saved_tensors" for h in spec.hooks))]


def _owned_vs_borrowed(owned: RunResult, borrowed: RunResult) -> list[Mismatch]:
    """The two holders must agree exactly, native probes included, at every checkpoint."""
    def lifetimes_only(r: RunResult) -> RunResult:
        return replace(r, tensors={}, values={c: v for c, v in r.values.items()
                                              if c.startswith((LIFE, PROBE))})
    return compare(lifetimes_only(owned), lifetimes_only(borrowed), EXACT)


def gradchecked_spec(spec: GraphSpec) -> GraphSpec:
    """The spec gradcheck_verdict checks: gradcheck runs a backward over every leaf, whatever the
    spec's backward mode, so the known issues' triggers are judged on the spec as it runs it, and
    those of the stock apply are stepped around with their workarounds."""
    as_run = replace(spec, backward="backward" if spec.backward == "none" else spec.backward,
                     grad_leaves=())
    hit = [k for k in known_issues.KNOWN_ISSUES
           if k.affects_path("eager") and k.affects_installed_torch() and k.trigger(as_run)]
    return known_issues.workaround(as_run, hit)


def gradcheck_verdict(spec: GraphSpec, device: str = "cpu", max_elements: int = GRAPH.gradcheck_elements
                      ) -> tuple[str, str]:
    """("ok" | "failed" | "skipped", detail) for a campaign: gradcheck of the example where
    it is cheap. Known torch issues of the stock apply are stepped around with their
    workarounds (forward AD through them would raise or drop tangents)."""
    why = gradcheck_reason(spec, max_elements)
    if why is not None:
        return "skipped", why
    # (the workaround variant may have no differentiable output left to compare)
    checked = gradchecked_spec(spec)
    why = gradcheck_reason(checked, max_elements)
    if why is not None:
        return "skipped", why
    try:
        gradcheck_graph(checked, device)
    except GradcheckError as e:
        return "failed", str(e).splitlines()[0]
    except GradcheckRaised as e:  # torch raised inside gradcheck: a finding; the harness's own errors propagate
        return "failed", f"gradcheck raised {e}"
    return "ok", ""


# --- a user's own Function: one node and its sample (harness.function_check) ------------------
#
# Every registered path that has `run_with` runs the Function (harness.function_run), eager first:
# eager is the reference, judged by the float64 oracles (harness.oracles.function_math), and every
# other path is compared with it, bit for bit where the path runs the same code (exact_vs_eager)
# and within torch.testing's default per-dtype tolerances where it compiles (DtypeTolerances),
# since nothing is known here of the user's ops.

CHECKS = ("outputs", "gradients", "gradcheck", "jvp", "vmap", "double_backward", "mark_dirty", "lifetimes")
#: the checks whose results come from running each path (the others run the stock apply)
PATH_CHECKS = ("outputs", "gradients", "jvp", "double_backward", "lifetimes")
#: which check judges each runner checkpoint
CHECK_OF_CHECKPOINT = {"forward": "outputs", "backward": "gradients", "double_backward": "double_backward",
                       "forward_ad": "jvp"}
#: the float64 oracles and vmap run the stock apply; records name them after what they are
FLOAT64 = "eager float64"
VMAP = "torch.vmap"


@dataclass(frozen=True)
class CheckRecord:
    """One check of one sample on one path."""

    check: str
    path: str
    #: one of STATUSES: ok | failed | partly (a known torch issue explained part of it, which was
    #: left unjudged; the rest agreed) | known (a known torch issue explained all that the check
    #: judges) | unsupported (nothing judged here; the detail says why)
    status: str
    detail: str = ""
    seconds: float = 0.0
    sample: int = 0
    #: known torch issues (harness/known_issues/) that explained differences here; what they
    #: do not explain was still judged, and fails the record
    known: tuple[str, ...] = ()
    #: failed because something raised outside what the check observes: the detail holds the
    #: exception, the end of its traceback, and whether the Function or the harness raised it
    raised: bool = False


#: receives one record's fields: record(check, path, status, detail, seconds, sample, known, raised)
Record = Callable[..., None]


def check_sample(subject: FunctionSample, paths: list[Any], record: Record, policy: Policy = FUNCTION) -> None:
    """Every check of `subject.checks` on one sample of a user's Function, on `paths` (registry paths
    with run_with, eager first) and the float64 oracles; `subject.unavailable`: path -> why it cannot
    run here. Each result goes to `record`; whatever raises becomes its check's record, so all
    complete."""
    function, sample, checks = subject.function, subject.args, subject.checks

    def add(check: str, path: str, status: str, detail: str = "", seconds: float = 0.0,
            known: tuple[str, ...] = (), raised: bool = False) -> None:
        if check in checks:
            record(check, path, status, detail, seconds, 0, known, raised)

    unavailable = subject.unavailable

    for path, why in unavailable.items():
        for check in PATH_CHECKS:
            add(check, path, "unsupported", f"path not available here: {why}")
    _check_paths(function, sample, paths, checks, add, policy)
    if "mark_dirty" in checks:
        with _isolated(function, ("mark_dirty",), "eager", add):
            _check_mark_dirty(function, sample, add)
    limit = policy.gradcheck_elements
    for check, oracle in (("gradcheck", lambda f, x: function_math.gradcheck(f, x, limit)),
                          ("jvp", lambda f, x: function_math.gradcheck_forward_ad(f, x, limit)),
                          ("double_backward", lambda f, x: function_math.gradgradcheck(f, x, limit)),
                          ("vmap", function_math.check_vmap)):
        if check in checks:
            where = VMAP if check == "vmap" else FLOAT64
            with _isolated(function, (check,), where, add):
                started = time.perf_counter()
                status, detail = oracle(function, sample)
                add(check, where, status, detail, time.perf_counter() - started)


@contextlib.contextmanager
def _isolated(function: type, checks: Sequence[str], path: str, add: Record) -> Iterator[None]:
    """One check on one path: whatever escapes it fails that record (`raised`), with its
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
            add(check, path, "failed", f"{who} {type(e).__name__}: {e}\n{shown}", time.perf_counter() - started,
                raised=True)


def _source_file(function: type) -> str | None:
    try:
        return inspect.getsourcefile(function)
    except (OSError, TypeError):
        return None


def _check_paths(function: type, sample: tuple, paths: list[Any], checks: Sequence[str], add: Record,
                 policy: Policy) -> None:
    """outputs, gradients, lifetimes (one run per path), double_backward and jvp (one run each)."""
    wants = set(checks)
    runs = []
    if wants & {"outputs", "gradients", "lifetimes"}:
        runs.append(("backward", ("outputs", "gradients", "lifetimes")))
    for check, mode, not_applicable in (("double_backward", "double", double_backward_not_applicable),
                                        ("jvp", "forward_ad", jvp_not_applicable)):
        if check in wants:
            why = not_applicable(function, sample)
            if why is None:
                runs.append((mode, (check,)))
            else:
                for path in paths:
                    add(check, path.name, "unsupported", why)
    for mode, judged in runs:
        eager = None
        for path in paths:  # eager first: the reference
            timings: dict[str, float] = {}
            started = time.perf_counter()
            reason = path.unsupported(RUN_SPECS[mode]) if mode in RUN_SPECS else None
            if reason is not None:
                for check in judged:
                    add(check, path.name, "unsupported", reason)
                continue
            with _isolated(function, judged, path.name, add):
                try:
                    result, ran = observe_on(function, sample, path, mode, timings=timings,
                                             lifetimes="lifetimes" in wants and mode == "backward")
                except NotRun as e:  # cannot fail here: eager's own code
                    for check in judged:
                        add(check, path.name, "unsupported", e.why)
                    continue
                elapsed = time.perf_counter() - started
                if path.name == "eager":
                    eager = result
                if eager is None:  # eager itself raised outside the runner: nothing to compare with
                    for check in judged:
                        add(check, path.name, "unsupported", "eager, the reference, did not complete")
                    continue
                _judge_run(judged, ran, result, eager, timings, elapsed, add, policy)


def _judge_run(judged: tuple[str, ...], runner: PathRun, result: RunResult, eager: RunResult | None,
               timings: dict[str, float], elapsed: float, add: Record, policy: Policy) -> None:
    """One record per judged check: failed (with every problem), ok, partly, known, or unsupported with
    why nothing was judged (eager is the reference; the run stopped before the check's checkpoint;
    the path cannot run it, or runs eager's own code for it)."""
    if result.status == "unsupported":
        for check in judged:
            add(check, runner.name, "unsupported", result.reason)
        return
    incompatible = function_math.documented_incompatibility(result.error) if result.status == "error" else None
    if incompatible is not None:
        for check in judged:
            add(check, runner.name, "unsupported", incompatible)
        return
    problems, known, wholly = _problems(judged, runner, result, eager, policy)
    note = result.note  # how the path got this result, e.g. through Dynamo's eager fallback
    for check in judged:
        seconds = timings.get(check, 0.0) if len(judged) > 1 else elapsed
        issues = known.get(check, ())
        beside = f"known: {', '.join(_known_text(k) for k in issues)}" if issues else ""
        if problems[check]:
            detail = "; ".join(problems[check]) + "".join(f" ({t})" for t in (beside, note) if t)
            add(check, runner.name, "failed", detail, seconds, issues)
        elif not _reached(check, result):
            add(check, runner.name, "unsupported", f"the run stopped earlier ({result.describe_error()})", seconds)
        elif check == "gradients" and "skipped" in result.values.get("backward", {}):
            add(check, runner.name, "unsupported", "no gradient to compare: nothing requires grad (no output "
                "that requires grad, or no input)", seconds)
        elif runner.name == "eager" and check != "lifetimes":
            add(check, runner.name, "unsupported", "the reference for the other paths; judged by the float64 oracles",
                seconds)
        elif check in runner.not_compared:
            add(check, runner.name, "unsupported", "; ".join(t for t in (runner.not_compared[check], note) if t),
                seconds)
        elif check in wholly:
            add(check, runner.name, "known", f"{', '.join(issues)} damages all that this check judges here, "
                "and explained every difference; " + "; ".join(t for t in (beside, note) if t), seconds, issues)
        else:
            unseen = "" if check != "lifetimes" or runner.observes_saved else (
                "saved tensors are not observed on this path (a saved-tensor hook would change what it "
                "compiles); leaks, cycles and use counts were checked")
            # a known issue without a workaround explained part of the check: that part is not judged
            left = f"what {', '.join(issues)} damages was left unjudged; the rest agreed" if issues else ""
            add(check, runner.name, "partly" if issues else "ok",
                "; ".join(t for t in (left, beside, unseen, note) if t), seconds, issues)


def _known_text(issue_id: str) -> str:
    issue = next(k for k in known_issues.KNOWN_ISSUES if k.id == issue_id)
    return f"{issue.id} (harness/known_issues/reproducers/{issue.reproducer})"


def _against_eager(eager: RunResult, result: RunResult, exact: bool, policy: Policy) -> list[Mismatch]:
    """A path's run of the Function against eager's: values, not lifetimes or mutation bookkeeping."""
    def judged(r: RunResult) -> RunResult:
        return replace(r, values={c: v for c, v in r.values.items() if c != "mark_dirty" and not c.startswith("life:")})
    eager, result = judged(eager), judged(result)
    return against_eager(eager, result, EXACT if exact else policy.tolerances(eager), lifetimes=False)


def _problems(judged: tuple[str, ...], runner: PathRun, result: RunResult, eager: RunResult | None,
              policy: Policy) -> tuple[dict[str, list[str]], dict[str, tuple[str, ...]], set[str]]:
    """check -> what is wrong: eager's own errors; every other path's differences from eager;
    the lifetime rules of a run that completed. And check -> the known torch issues that
    explained some differences (the registry's entries that need no graph structure, matched as
    in campaigns: each explains only the differences it causes), and the checks where they
    explained every role of the check's own checkpoint."""
    problems: dict[str, list[str]] = {check: [] for check in judged}
    known: dict[str, tuple[str, ...]] = {}
    wholly: set[str] = set()

    def note(checkpoint: str, text: str) -> None:
        check = CHECK_OF_CHECKPOINT.get(checkpoint, judged[0])
        problems[check if check in problems else judged[0]].append(text)

    if runner.name == "eager":
        if result.status == "error":
            note(result.error_checkpoint, f"eager raised {result.describe_error()}")
    else:
        assert eager is not None, "eager runs first: it is the reference"
        sorted_out = explain_by_policy(None, result, _against_eager(eager, result, runner.exact, policy), policy)
        for m in sorted_out.unexplained:
            note(m.checkpoint, m.describe())
        explained: dict[str, set[str]] = {}  # checkpoint -> the roles the known issues explained
        for m, by in sorted_out.explained:
            check = CHECK_OF_CHECKPOINT.get(m.checkpoint, judged[0])
            check = check if check in problems else judged[0]
            known[check] = tuple(dict.fromkeys((*known.get(check, ()), *by)))
            explained.setdefault(m.checkpoint, set()).add(m.role)
        for check in known:  # all that the check is for was damaged: nothing of it was judged
            at = {c: k for k, c in CHECK_OF_CHECKPOINT.items()}.get(check)
            roles = set(eager.tensors.get(at, {})) | set(result.tensors.get(at, {}))
            if roles and roles <= explained.get(at, set()):
                wholly.add(check)
    if "lifetimes" in problems and result.status != "error":
        sorted_out = explain_by_policy(None, result, _lifetime_rules(RUN_SPECS["backward"], result), policy)
        problems["lifetimes"] = [in_words(m.checkpoint, m.role, m.detail) for m in sorted_out.unexplained]
        if sorted_out.issues:
            known["lifetimes"] = sorted_out.known
    return problems, known, wholly


def _reached(check: str, result: RunResult) -> bool:
    """Whether the run got as far as the checkpoint that `check` judges (lifetimes: the end)."""
    if result.status != "error":
        return True
    if check == "lifetimes":
        return False
    at = {c: k for k, c in CHECK_OF_CHECKPOINT.items()}[check]
    return CHECKPOINTS.index(at) <= CHECKPOINTS.index(result.error_checkpoint)


def _check_mark_dirty(function: type, sample: tuple, add: Record) -> None:
    started = time.perf_counter()
    result = observe(function, sample, path_registry.get("eager"), "backward")
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
        add("mark_dirty", "eager", "unsupported",
            f"forward modified {', '.join(unknown)} in place, but no output requires grad, so no graph "
            "tells whether it was declared", seconds)
    elif result.status == "error" and result.error_checkpoint == "forward":
        add("mark_dirty", "eager", "unsupported", f"the forward raised {result.describe_error()}", seconds)
    else:
        add("mark_dirty", "eager", "ok", "no undeclared in-place update" if not mutated else
            f"in-place update of {', '.join(mutated)} declared", seconds)


__all__ = ["CHECKS", "FLOAT64", "FUNCTION", "GRAPH", "JUDGED", "PATH_CHECKS", "STATUSES", "VMAP", "CheckRecord",
           "Explanation", "FunctionSample", "PathOutcome", "Policy", "SampleVerdict", "Verdict", "check",
           "check_sample", "explain", "explain_by_policy", "gradcheck_verdict", "gradchecked_spec",
           "nothing_checked_sentence"]
