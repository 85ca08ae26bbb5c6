"""The fuzz loop: draw graphs, check every path, count outcomes, shrink and write failures.

Hypothesis drives generation in batches until the time budget is spent. A failing
example is recorded (not raised) so the campaign goes on; afterwards each distinct
failure signature is shrunk with `hypothesis.find` and written as a reproducer.
"""

from __future__ import annotations

import collections
import gc
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.errors import FlakyFailure, NoSuchExample

from harness.check import PathOutcome, Verdict, check
from harness.dataflow import Dataflow
from harness.oracles.math import CAMPAIGN_GRADCHECK_ELEMENTS, gradcheck_verdict
from harness.paths import Path as ExecPath
from harness.repro import write_reproducer
from harness.spec import GraphSpec
from strategies import graphs

BATCH = 25
#: the share of a campaign's budget kept for shrinking failures and writing reproducers
SHRINK_SHARE = 0.15


@dataclass
class PathCounts:
    """Outcomes of one path. Every example is exactly one of ok, failed, stopped (a known
    torch issue ended the check and no workaround variant could be checked) or unsupported;
    `checked` = ok + failed. `known` counts each known torch issue wherever it was hit, also
    in examples checked past it on the workaround variant (`past_known` of them)."""

    ok: int = 0
    failed: int = 0
    stopped: int = 0
    past_known: int = 0
    unsupported: collections.Counter = field(default_factory=collections.Counter)
    known: collections.Counter = field(default_factory=collections.Counter)

    @property
    def checked(self) -> int:
        return self.ok + self.failed

    def add(self, outcome: PathOutcome) -> None:
        if outcome.status == "ok":
            self.ok += 1
        elif outcome.status == "failed":
            self.failed += 1
        elif outcome.status == "unsupported":
            self.unsupported[outcome.reason] += 1
        else:
            self.stopped += 1
        self.known.update(outcome.known)
        self.past_known += bool(outcome.known) and outcome.checked

    def as_json(self, examples: int) -> dict[str, Any]:
        return {"checked": self.checked, "checked_share": round(self.checked / examples, 4) if examples else 0.0,
                "ok": self.ok, "failed": self.failed, "stopped_by_known": self.stopped,
                "checked_past_known": self.past_known, "unsupported": dict(self.unsupported),
                "known": dict(self.known)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "PathCounts":
        return cls(data["ok"], data["failed"], data["stopped_by_known"], data["checked_past_known"],
                   collections.Counter(data["unsupported"]), collections.Counter(data["known"]))

    def merge(self, other: "PathCounts") -> None:
        self.ok += other.ok
        self.failed += other.failed
        self.stopped += other.stopped
        self.past_known += other.past_known
        self.unsupported.update(other.unsupported)
        self.known.update(other.known)


@dataclass
class Failure:
    signature: str  # the cause, without the paths it was seen on
    spec: GraphSpec
    report: str
    count: int = 1
    reproducer: str | None = None
    paths: set[str] = field(default_factory=set)


@dataclass
class CampaignResult:
    paths: list[str]
    device: str
    examples: int = 0
    with_backward: int = 0  # examples where a backward really runs (compiled autograd's share)
    seconds: float = 0.0
    counts: dict[str, PathCounts] = field(default_factory=dict)
    failures: dict[str, Failure] = field(default_factory=dict)
    lifetimes: bool = True
    #: float64 gradcheck of the examples where it is cheap: ok / failed / skipped
    gradcheck: collections.Counter = field(default_factory=collections.Counter)

    def add_gradcheck(self, spec: GraphSpec, status: str, detail: str) -> None:
        self.gradcheck[status] += 1
        if status == "failed":
            cause = "gradcheck: " + re.sub(r"[-+]?\d[\d.e+-]*", "N", detail)[:160]
            if cause in self.failures:
                self.failures[cause].count += 1
            else:  # no path to replay it on: the spec is kept, shrinking and reproducer skipped
                self.failures[cause] = Failure(cause, spec, detail)

    def add(self, verdict: Verdict) -> None:
        self.examples += 1
        self.with_backward += has_backward(verdict.spec)
        for name, outcome in verdict.outcomes.items():
            self.counts.setdefault(name, PathCounts()).add(outcome)
            if outcome.status == "failed":
                # one failure per cause: the same difference on several paths is one bug to shrink
                cause = signature(outcome)
                if cause in self.failures:
                    self.failures[cause].count += 1
                    self.failures[cause].paths.add(name)
                else:
                    self.failures[cause] = Failure(cause, outcome.checked_spec or verdict.spec, verdict.report(),
                                                   paths={name})

    def as_json(self) -> dict[str, Any]:
        return {
            "torch": torch.__version__,
            "device": self.device,
            "examples": self.examples,
            "examples_with_backward": self.with_backward,
            "seconds": round(self.seconds, 3),
            "examples_per_second": round(self.examples / self.seconds, 2) if self.seconds else 0.0,
            "lifetimes": self.lifetimes,
            "gradcheck": dict(self.gradcheck),
            "paths": {name: self.counts.get(name, PathCounts()).as_json(self.examples) for name in self.paths},
            "failures": [{"signature": f.signature, "count": f.count, "paths": sorted(f.paths),
                          "reproducer": f.reproducer, "report": f.report, "spec": f.spec.to_json()}
                         for f in self.failures.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CampaignResult":
        result = cls(list(data["paths"]), data["device"], data["examples"], data["examples_with_backward"],
                     data["seconds"], lifetimes=data["lifetimes"],
                     gradcheck=collections.Counter(data["gradcheck"]))
        result.counts = {name: PathCounts.from_json(c) for name, c in data["paths"].items()}
        for f in data["failures"]:
            result.failures[f["signature"]] = Failure(f["signature"], GraphSpec.from_json(f["spec"]),
                                                      f["report"], f["count"], f["reproducer"], set(f["paths"]))
        return result

    def merge(self, other: "CampaignResult") -> None:
        """Add another worker's counts and failures (seconds are wall time, kept by the caller)."""
        self.examples += other.examples
        self.with_backward += other.with_backward
        self.gradcheck.update(other.gradcheck)
        for name, counts in other.counts.items():
            self.counts.setdefault(name, PathCounts()).merge(counts)
        for sig, f in other.failures.items():
            if sig in self.failures:
                self.failures[sig].count += f.count
                self.failures[sig].paths |= f.paths
            else:
                self.failures[sig] = f

    def summary(self) -> str:
        rate = self.examples / self.seconds if self.seconds else 0.0
        oracle = "with" if self.lifetimes else "without"
        lines = [f"torch {torch.__version__} on {self.device}: {self.examples} examples "
                 f"({self.with_backward} with a backward) in {self.seconds:.1f} s ({rate:.1f} examples/s, "
                 f"{oracle} the lifetime oracle)", "",
                 "checked = ok + failed: compared and judged, on the example or on the workaround variant",
                 "that steps around a known torch issue; stopped = a known issue ended the check.", "",
                 f"{'path':<18} {'checked':>15} {'ok':>7} {'failed':>7} {'stopped':>8} {'unsupported':>12}"]
        for name in self.paths:
            c = self.counts.get(name, PathCounts())
            share = f"{c.checked} ({100 * c.checked / self.examples:.0f}%)" if self.examples else "0"
            lines.append(f"{name:<18} {share:>15} {c.ok:>7} {c.failed:>7} {c.stopped:>8} "
                         f"{sum(c.unsupported.values()):>12}")
            for reason, n in sorted(c.unsupported.items()):
                lines.append(f"{'':<18}   unsupported: {reason} ({n})")
            for issue, n in sorted(c.known.items()):
                lines.append(f"{'':<18}   known torch issue hit: {issue} ({n})")
            if c.past_known:
                lines.append(f"{'':<18}   checked past a known issue on its workaround: {c.past_known}")
            if name.startswith("compiled") and self.with_backward:  # it can only check a backward
                lines.append(f"{'':<18}   checked {100 * c.checked / self.with_backward:.0f}% of the "
                             f"{self.with_backward} examples where a backward runs")
        g = self.gradcheck
        lines += ["", f"float64 gradcheck (examples of at most {CAMPAIGN_GRADCHECK_ELEMENTS} input elements): "
                      f"{g['ok']} ok, {g['failed']} failed, {g['skipped']} skipped"]
        if self.failures:
            lines += ["", f"{len(self.failures)} distinct failure(s):"]
            for f in self.failures.values():
                lines.append(f"  x{f.count} on {','.join(sorted(f.paths))}: {f.signature}")
                if f.reproducer:
                    lines.append(f"     reproducer: {f.reproducer}")
        else:
            lines += ["", "no failures"]
        return "\n".join(lines)


def has_backward(spec: GraphSpec) -> bool:
    """A backward really runs: the spec asks for one and some Function output requires grad."""
    flow = Dataflow(spec)
    return spec.backward != "none" and any(flow.requires_grad[r] for r in spec.value_refs() if r.startswith("f"))


def signature(outcome: PathOutcome) -> str:
    """What kind of failure this is, without the example's particulars or the path (for
    dedup: the same difference on several paths is one cause)."""
    m = outcome.mismatches[0]
    detail = re.sub(r"[-+]?\d[\d.e+-]*", "N", m.detail.split("\n")[0])[:160]
    role = m.role.split(":")[0]
    against = "the other path" if m.against not in ("math", "eager", "lifetime rule") else m.against
    return f"vs {against} at {m.checkpoint} {role}: {detail}"


def run_campaign(paths: list[ExecPath], *, budget_s: float, device: str = "cpu",
                 out_dir: str | Path = "failures", database: Any = None, shrink_examples: int = 200,
                 max_examples: int | None = None, lifetimes: bool = True,
                 on_example: Callable[[GraphSpec], None] | None = None,
                 on_progress: Callable[[CampaignResult], None] | None = None,
                 name_prefix: str = "", until_failure: bool = False) -> CampaignResult:
    """Fuzz until the budget is spent (or, with `until_failure`, until the first failure).
    on_example sees each spec before it is checked and on_progress the running result after
    it (the worker processes use them for crash isolation)."""
    result = CampaignResult([p.name for p in paths], device, lifetimes=lifetimes)
    # A full gc.collect() costs ~80 ms with torch imported; once everything imported so far
    # is frozen out of the collector, the lifetime oracle's collections cost ~0.01 ms.
    gc.collect()
    gc.freeze()
    start = time.perf_counter()
    end = start + budget_s
    # the budget covers everything: fuzzing stops early enough to leave a share for
    # shrinking and writing the failures it found
    deadline = start + budget_s * (1 - SHRINK_SHARE)

    def fuzzing() -> bool:
        return (time.perf_counter() < deadline and (max_examples is None or result.examples < max_examples)
                and not (until_failure and result.failures))

    @settings(max_examples=BATCH, deadline=None, database=database, derandomize=False,
              phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(graphs())
    def one_batch(spec: GraphSpec) -> None:
        if fuzzing():
            if on_example is not None:
                on_example(spec)
            result.add(check(spec, paths, device, lifetimes=lifetimes))
            result.add_gradcheck(spec, *gradcheck_verdict(spec, device))
            if on_progress is not None:
                result.seconds = time.perf_counter() - start
                on_progress(result)

    while fuzzing():
        one_batch()
    failures = list(result.failures.values())
    for i, failure in enumerate(failures):  # one per cause, on the paths it failed on
        failing = [p for p in paths if p.name in failure.paths]
        if not failing:
            continue  # a gradcheck failure or a crashed worker: nothing to replay
        # each cause gets an equal share of what is left (a fast one leaves more to the rest)
        # (half of it to shrink, half to check the result again and write the script)
        share = (end - time.perf_counter()) / (len(failures) - i)
        failure.spec = _shrink(failure, failing, device, shrink_examples, on_example,
                               until=time.perf_counter() + share / 2)
        path = Path(out_dir) / f"{name_prefix}failure_{i}.py"
        verdict = check(failure.spec, failing, device)
        write_reproducer(failure.spec, [p.name for p in failing], device, verdict.report(), path, verdict=verdict)
        failure.reproducer = str(path)
    result.seconds = time.perf_counter() - start
    return result


class _OutOfTime(Exception):
    pass


def _shrink(failure: Failure, paths: list[ExecPath], device: str, max_examples: int,
            on_example: Callable[[GraphSpec], None] | None = None, *, until: float) -> GraphSpec:
    """A smaller spec that fails the same way, if Hypothesis finds one by `until`; else the original."""

    def same_failure(spec: GraphSpec) -> bool:
        if time.perf_counter() > until:
            raise _OutOfTime
        if on_example is not None:
            on_example(spec)
        verdict = check(spec, paths, device)
        return any(signature(o) == failure.signature for o in verdict.failed)

    try:
        found = find(graphs(), same_failure, settings=settings(
            max_examples=max_examples, deadline=None, database=None,
            suppress_health_check=list(HealthCheck)))
    except (NoSuchExample, FlakyFailure, _OutOfTime):
        return failure.spec
    return found if len(found.to_json()) < len(failure.spec.to_json()) else failure.spec


__all__ = ["CampaignResult", "run_campaign", "signature"]
