"""Check a user's own `torch.autograd.Function` on every execution path: `check_function`.

The fuzzer (harness.campaign) checks Functions it generates from specs; this module checks one
a project wrote, with the campaign's own parts: each registry path runs it through `run_with`
(harness.function_run), harness.check judges each sample against eager, the float64 oracles
and the known torch issues, and harness.repro writes the reproducer of a failure. This module
takes the samples (a list, a callable or a Hypothesis strategy: then a property test) and keeps
the report table. The checks (names used in reports, errors and `checks=`):

  outputs          every path's outputs (values, requires_grad, non-tensor outputs) agree with eager's
  gradients        every path's gradients of a weighted loss agree with eager's
  gradcheck        float64 `torch.autograd.gradcheck` of the backward (finite differences)
  jvp              the user `jvp`: float64 gradcheck of forward AD, and tangents agree across paths
  vmap             `torch.vmap` (the vmap rule or generate_vmap_rule) agrees with a loop, for
                   outputs and per-sample gradients (`torch.func.vjp` under vmap)
  double_backward  float64 `gradgradcheck`, and second-order gradients agree across paths
  mark_dirty       every input the forward modified in place was declared with ctx.mark_dirty
  lifetimes        saved tensors released by backward, nothing leaked, no reference cycles

docs/check_function.md describes the checks, the paths and the statuses of the records.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import torch

from harness import repro
from harness.check import CHECKS, FLOAT64, FUNCTION, JUDGED, STATUSES, VMAP, CheckRecord, FunctionSample, check
from harness.function_run import fresh, has_jvp, has_vmap_rule, is_once_differentiable, observe, path_names, select_paths
from harness.oracles.compare import dtype_tolerance

# --- report --------------------------------------------------------------------------------


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
        """Failed checks, those that could not complete because something raised (`raised`) among them."""
        return [r for r in self.records if r.status == "failed"]

    def outcomes(self) -> dict[tuple[str, str], tuple[str, str]]:
        """(check, path) -> (status, detail) over every sample: failed if any failed, else
        ok if any was ok, else the first partly, known, or why it judged nothing."""
        def rank(r: CheckRecord) -> tuple[int, bool]:  # a difference found before something raising
            return STATUSES.index(r.status), r.raised
        out: dict[tuple[str, str], CheckRecord] = {}
        for r in self.records:
            held = out.get((r.check, r.path))
            if held is None or rank(r) < rank(held):
                out[(r.check, r.path)] = r
        return {key: (r.status, r.detail) for key, r in out.items()}

    def seconds_by_check(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for r in self.records:
            totals[r.check] = totals.get(r.check, 0.0) + r.seconds
        return totals

    def checks_run(self) -> list[str]:
        """Checks that judged something (ok or failed) on at least one path."""
        return [c for c in CHECKS if any(r.check == c and r.status in JUDGED for r in self.records)]

    def unchecked(self) -> list[str]:
        """What was asked for and judged nothing (no check was ok or failed there), each with why:
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


def reproducer(function: type, sample: Sequence[Any], checks: Sequence[str], paths: Sequence[str],
               device: str | None, summary: str) -> str:
    """A standalone script: re-runs exactly these checks on this sample; exits 1 while they fail.
    paths: the records' paths (the float64 oracles and vmap run eager's apply)."""
    runs = [p for p in paths if p not in (FLOAT64, VMAP)] or ["eager"]
    return repro.function_script(function, sample, checks, runs, device, summary)


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
    runnable, unavailable = select_paths(paths)
    options = _Options(runnable, unavailable, _selected_checks(checks),
                       None if device is None else torch.device(device))
    # asked for: the paths named, or every one that runs here (the default)
    report = FunctionReport(function.__qualname__,
                            paths=[p.name for p in runnable] if paths is None else path_names(paths),
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


@dataclass
class _Options:
    paths: list[Any]  # registry paths with run_with, eager first
    unavailable: dict[str, str]  # path -> why it cannot run here
    checks: tuple[str, ...]
    device: torch.device | None


def _check_sample(function: type, sample: tuple, index: int, options: _Options) -> list[CheckRecord]:
    """Every check of one sample (moved to `device` first, where one was given)."""
    if options.device is not None:
        sample = tuple(fresh(sample, options.device))
    verdict = check(FunctionSample(function, sample, options.checks, options.unavailable), options.paths,
                    policy=FUNCTION)
    return [dataclasses.replace(r, sample=index) for r in verdict.records]


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
