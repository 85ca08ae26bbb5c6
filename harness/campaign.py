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

from harness.check import Verdict, check
from harness.paths import Path as ExecPath
from harness.repro import write_reproducer
from harness.spec import GraphSpec
from strategies import graphs

BATCH = 25


@dataclass
class PathCounts:
    ok: int = 0
    failed: int = 0
    unsupported: collections.Counter = field(default_factory=collections.Counter)
    known: collections.Counter = field(default_factory=collections.Counter)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "failed": self.failed, "unsupported": dict(self.unsupported),
                "known": dict(self.known)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "PathCounts":
        return cls(data["ok"], data["failed"], collections.Counter(data["unsupported"]),
                   collections.Counter(data["known"]))

    def merge(self, other: "PathCounts") -> None:
        self.ok += other.ok
        self.failed += other.failed
        self.unsupported.update(other.unsupported)
        self.known.update(other.known)


@dataclass
class Failure:
    signature: str
    spec: GraphSpec
    report: str
    count: int = 1
    reproducer: str | None = None


@dataclass
class CampaignResult:
    paths: list[str]
    device: str
    examples: int = 0
    seconds: float = 0.0
    counts: dict[str, PathCounts] = field(default_factory=dict)
    failures: dict[str, Failure] = field(default_factory=dict)
    lifetimes: bool = True

    def add(self, verdict: Verdict) -> None:
        self.examples += 1
        for name, outcome in verdict.outcomes.items():
            c = self.counts.setdefault(name, PathCounts())
            if outcome.status == "ok":
                c.ok += 1
            elif outcome.status == "unsupported":
                c.unsupported[outcome.reason] += 1
            elif outcome.status == "known":
                c.known[outcome.reason] += 1
            else:
                c.failed += 1
                sig = signature(verdict, name)
                if sig in self.failures:
                    self.failures[sig].count += 1
                else:
                    self.failures[sig] = Failure(sig, verdict.spec, verdict.report())

    def as_json(self) -> dict[str, Any]:
        return {
            "torch": torch.__version__,
            "device": self.device,
            "examples": self.examples,
            "seconds": round(self.seconds, 3),
            "examples_per_second": round(self.examples / self.seconds, 2) if self.seconds else 0.0,
            "lifetimes": self.lifetimes,
            "paths": {name: self.counts.get(name, PathCounts()).as_json() for name in self.paths},
            "failures": [{"signature": f.signature, "count": f.count, "reproducer": f.reproducer,
                          "report": f.report, "spec": f.spec.to_json()} for f in self.failures.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CampaignResult":
        result = cls(list(data["paths"]), data["device"], data["examples"], data["seconds"],
                     lifetimes=data["lifetimes"])
        result.counts = {name: PathCounts.from_json(c) for name, c in data["paths"].items()}
        for f in data["failures"]:
            result.failures[f["signature"]] = Failure(f["signature"], GraphSpec.from_json(f["spec"]),
                                                      f["report"], f["count"], f["reproducer"])
        return result

    def merge(self, other: "CampaignResult") -> None:
        """Add another worker's counts and failures (seconds are wall time, kept by the caller)."""
        self.examples += other.examples
        for name, counts in other.counts.items():
            self.counts.setdefault(name, PathCounts()).merge(counts)
        for sig, f in other.failures.items():
            if sig in self.failures:
                self.failures[sig].count += f.count
            else:
                self.failures[sig] = f

    def summary(self) -> str:
        rate = self.examples / self.seconds if self.seconds else 0.0
        oracle = "with" if self.lifetimes else "without"
        lines = [f"torch {torch.__version__} on {self.device}: {self.examples} examples in "
                 f"{self.seconds:.1f} s ({rate:.1f} examples/s, {oracle} the lifetime oracle)", "",
                 f"{'path':<10} {'ok':>7} {'failed':>7} {'known':>7} {'unsupported':>12}"]
        for name in self.paths:
            c = self.counts.get(name, PathCounts())
            lines.append(f"{name:<10} {c.ok:>7} {c.failed:>7} {sum(c.known.values()):>7} "
                         f"{sum(c.unsupported.values()):>12}")
            for reason, n in sorted(c.unsupported.items()):
                lines.append(f"{'':<10}   unsupported: {reason} ({n})")
            for issue, n in sorted(c.known.items()):
                lines.append(f"{'':<10}   known torch issue: {issue} ({n})")
        if self.failures:
            lines += ["", f"{len(self.failures)} distinct failure(s):"]
            for f in self.failures.values():
                lines.append(f"  x{f.count} {f.signature}")
                if f.reproducer:
                    lines.append(f"     reproducer: {f.reproducer}")
        else:
            lines += ["", "no failures"]
        return "\n".join(lines)


def signature(verdict: Verdict, path: str) -> str:
    """What kind of failure this is, without the example's particulars (for dedup)."""
    outcome = verdict.outcomes[path]
    m = outcome.mismatches[0]
    detail = re.sub(r"[-+]?\d[\d.e+-]*", "N", m.detail.split("\n")[0])[:160]
    role = m.role.split(":")[0]
    return f"{path} vs {m.against} at {m.checkpoint} {role}: {detail}"


def run_campaign(paths: list[ExecPath], *, budget_s: float, device: str = "cpu",
                 out_dir: str | Path = "failures", database: Any = None, shrink_examples: int = 200,
                 max_examples: int | None = None, lifetimes: bool = True,
                 on_example: Callable[[GraphSpec], None] | None = None,
                 on_progress: Callable[[CampaignResult], None] | None = None,
                 name_prefix: str = "") -> CampaignResult:
    """Fuzz until the budget is spent. on_example sees each spec before it is checked and
    on_progress the running result after it (the worker processes use them for crash isolation)."""
    result = CampaignResult([p.name for p in paths], device, lifetimes=lifetimes)
    # A full gc.collect() costs ~80 ms with torch imported; once everything imported so far
    # is frozen out of the collector, the lifetime oracle's collections cost ~0.01 ms.
    gc.collect()
    gc.freeze()
    start = time.perf_counter()
    deadline = start + budget_s

    @settings(max_examples=BATCH, deadline=None, database=database, derandomize=False,
              phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(graphs())
    def one_batch(spec: GraphSpec) -> None:
        if time.perf_counter() < deadline and (max_examples is None or result.examples < max_examples):
            if on_example is not None:
                on_example(spec)
            result.add(check(spec, paths, device, lifetimes=lifetimes))
            if on_progress is not None:
                result.seconds = time.perf_counter() - start
                on_progress(result)

    while time.perf_counter() < deadline and (max_examples is None or result.examples < max_examples):
        one_batch()
    for i, failure in enumerate(result.failures.values()):
        failure.spec = _shrink(failure, paths, device, shrink_examples, on_example)
        path = Path(out_dir) / f"{name_prefix}failure_{i}.py"
        verdict = check(failure.spec, paths, device)
        write_reproducer(failure.spec, [p.name for p in paths], device, verdict.report(), path)
        failure.reproducer = str(path)
    return result


def _shrink(failure: Failure, paths: list[ExecPath], device: str, max_examples: int,
            on_example: Callable[[GraphSpec], None] | None = None) -> GraphSpec:
    """A smaller spec that fails the same way, if Hypothesis finds one; else the original."""

    def same_failure(spec: GraphSpec) -> bool:
        if on_example is not None:
            on_example(spec)
        verdict = check(spec, paths, device)
        return any(signature(verdict, p) == failure.signature for p in verdict.outcomes
                   if verdict.outcomes[p].status == "failed")

    try:
        found = find(graphs(), same_failure, settings=settings(
            max_examples=max_examples, deadline=None, database=None,
            suppress_health_check=list(HealthCheck)))
    except (NoSuchExample, FlakyFailure):
        return failure.spec
    return found if len(found.to_json()) < len(failure.spec.to_json()) else failure.spec


__all__ = ["CampaignResult", "run_campaign", "signature"]
