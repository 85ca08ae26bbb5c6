"""The fuzz loop: draw graphs, check every path, record each example; then shrink each
distinct cause with Hypothesis' own shrinker and write its reproducer.

Everything a campaign learns is a record (harness/records.py), and its counts are rebuilt
from records only (`CampaignResult.add_record`), live or from the log.

Shrinking starts from the example that failed, not from scratch. When an example shows a
cause not seen before (a path's mismatch, or gradcheck's failure), the fuzz test raises, so
Hypothesis saves that example's choice sequence in the example database under the cause's own
key (`CauseDatabase`). A worker that dies on an example (a crash or hang) cannot save it: it
sends the example's choice sequence before checking it, and shrinking saves that under the
cause's key. At the end, one test per cause runs with `phases=[Phase.reuse, Phase.shrink]`
over that key: Hypothesis replays the saved example and shrinks it, keeping its best in the
database as it goes; a crash's candidates each run in a forked child (`shows`).

The budget covers everything: once there are causes to shrink, fuzzing stops at
(1 - SHRINK_SHARE) of it and shrinking and the reproducers share the rest, each cause
getting an equal part of what is left when its turn comes (a cause out of time keeps the
smallest failing example seen so far); with nothing to shrink, fuzzing goes on to the end.
"""

from __future__ import annotations

import base64
import collections
import functools
import gc
import hashlib
import os
import re
import signal
import time
import traceback
import unittest
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, Verbosity, given, reject, settings
from hypothesis.database import ExampleDatabase, InMemoryExampleDatabase
from hypothesis.errors import Flaky

from harness.check import Verdict, check, gradcheck_verdict
from harness.dataflow import has_backward
from harness.devices import is_cuda
from harness.oracles.math import CAMPAIGN_GRADCHECK_ELEMENTS
from harness.paths import Path as ExecPath
from harness.paths.tracing import EXAMPLE_TRACES
from harness.records import cause_of, causes_of, features, now, outcome_record, same_cause, spec_hash, spec_size
from harness.repro import write_crash_reproducer, write_gradcheck_reproducer, write_reproducer
from harness.spec import GraphSpec
import strategies

BATCH = 25
#: the share of a campaign's budget kept for shrinking failures and writing reproducers (Hypothesis'
#: shrinking, then the script run once and reduced at the source level: what a maintainer reads)
SHRINK_SHARE = 0.25
#: of each cause's part of the shrinking time, what Hypothesis' shrinking may use; the rest writes the
#: reproducer, runs it once and reduces its source (harness.reduce)
SHRINK_PART = 0.5
GRADCHECK_CAUSE = "gradcheck"
#: a saved cause's replay or shrinking where the harness itself failed: its state is unknown
HARNESS_ERROR = "harness error"

Record = dict[str, Any]
OnRecord = Callable[[Record], None]


@dataclass
class PathCounts:
    """Outcomes of one path. Every example is exactly one of ok, failed, partly (a known torch
    issue without a workaround damaged part of the run, the rest agreed), stopped (a known torch
    issue ended the check and no workaround variant could be checked) or unsupported;
    `checked` = ok + failed: partly is not checked, what the issue damages was left unjudged.
    `known` counts each known torch issue wherever it was hit, also in examples checked past it on
    the workaround variant (`past_known` of them)."""

    ok: int = 0
    failed: int = 0
    stopped: int = 0
    past_known: int = 0
    unsupported: collections.Counter = field(default_factory=collections.Counter)
    known: collections.Counter = field(default_factory=collections.Counter)
    #: paths that compile the forward: how Dynamo ran the Functions, per example (one of
    #: harness.paths.tracing.EXAMPLE_TRACES), of all examples and of those with a backward
    traces: collections.Counter = field(default_factory=collections.Counter)
    traces_with_backward: collections.Counter = field(default_factory=collections.Counter)
    partly: int = 0
    #: elements that differed and were not judged (records.outcome_record's "unchecked": within
    #: a bound too wide to catch a 1.5x error; "overflowed": may overflow, not compared), and
    #: the examples with any
    unchecked: int = 0
    overflowed: int = 0
    uncompared_examples: int = 0

    @property
    def checked(self) -> int:
        return self.ok + self.failed

    def add(self, outcome: Record, backward: bool = False) -> None:
        """One path's outcome record (records.outcome_record) of an example (`backward`: one
        where a backward runs)."""
        status, known = outcome["status"], outcome.get("known", [])
        if "trace" in outcome:
            self.traces[outcome["trace"]] += 1
            if backward:
                self.traces_with_backward[outcome["trace"]] += 1
        if status == "ok":
            self.ok += 1
        elif status == "failed":
            self.failed += 1
        elif status == "partly":
            self.partly += 1
        elif status == "unsupported":
            self.unsupported[outcome["reason"]] += 1
        else:
            self.stopped += 1
        self.known.update(known)
        self.past_known += bool(known) and status in ("ok", "failed")
        unchecked, overflowed = outcome.get("unchecked", {}), outcome.get("overflowed", {})
        self.unchecked += sum(unchecked.values())
        self.overflowed += sum(overflowed.values())
        self.uncompared_examples += bool(unchecked or overflowed)

    def as_json(self, examples: int) -> dict[str, Any]:
        return {"checked": self.checked, "checked_share": round(self.checked / examples, 4) if examples else 0.0,
                "ok": self.ok, "partly": self.partly, "failed": self.failed, "stopped_by_known": self.stopped,
                "checked_past_known": self.past_known, "unsupported": dict(self.unsupported),
                "known": dict(self.known),
                "unchecked_elements": self.unchecked, "overflowed_elements": self.overflowed,
                "uncompared_examples": self.uncompared_examples,
                **({"trace": {**self.traces, "with_backward": dict(self.traces_with_backward)}}
                   if self.traces else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PathCounts:
        traces = dict(data.get("trace", {}))
        with_backward = traces.pop("with_backward", {})
        return cls(data["ok"], data["failed"], data["stopped_by_known"], data["checked_past_known"],
                   collections.Counter(data["unsupported"]), collections.Counter(data["known"]),
                   collections.Counter(traces), collections.Counter(with_backward), data.get("partly", 0),
                   data.get("unchecked_elements", 0), data.get("overflowed_elements", 0),
                   data.get("uncompared_examples", 0))

    def uncompared_line(self) -> str:
        """The elements that differed and were not judged, in words."""
        return (f"not judged, in {self.uncompared_examples} examples: {self.unchecked} elements unchecked at this "
                f"precision (a bound too wide to catch a 1.5x error), {self.overflowed} that may overflow "
                f"(not compared)")

    def trace_lines(self) -> list[str]:
        """How Dynamo ran the Functions (harness.paths.tracing), in words with shares."""
        if not self.traces:
            return []
        total = sum(self.traces.values())
        lines = ["how Dynamo ran the Functions: " + ", ".join(
            f"{how} {self.traces[how]} ({100 * self.traces[how] / total:.0f}%)" for how in EXAMPLE_TRACES)]
        back = self.traces_with_backward
        if sum(back.values()):
            n = sum(back.values())
            lines.append(f"of the {n} with a backward: every Function traced {100 * back['traced'] / n:.0f}%, "
                         f"at least one {100 * (back['traced'] + back['partly traced']) / n:.0f}%")
        return lines


@dataclass
class TwinCounts:
    """The twin-form oracle's work for one pair (harness/oracles/twins.py): the examples whose
    twin it was, those compared on at least one path (`checked`: agree or differ there) and
    those that differed on at least one; per path, how often each twin status came up."""

    examples: int = 0
    checked: int = 0
    failed: int = 0
    paths: dict[str, collections.Counter] = field(default_factory=dict)

    def add(self, twin: Record) -> None:
        """One example record's "twin" (TwinCheck.as_record)."""
        from harness.oracles.twins import CHECKED

        statuses = twin["paths"]
        self.examples += 1
        self.checked += any(s in CHECKED for s in statuses.values())
        self.failed += "differ" in statuses.values()
        for path, status in statuses.items():
            self.paths.setdefault(path, collections.Counter())[status] += 1

    def as_json(self) -> dict[str, Any]:
        return {"examples": self.examples, "checked": self.checked, "failed": self.failed,
                "paths": {path: dict(c) for path, c in self.paths.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TwinCounts:
        return cls(data["examples"], data["checked"], data["failed"],
                   {path: collections.Counter(c) for path, c in data["paths"].items()})

    def line(self, pair: str, width: int) -> str:
        compared = ", ".join(f"{path} {c['agree'] + c['differ']}" for path, c in self.paths.items())
        left = collections.Counter()
        for c in self.paths.values():
            left.update({status: n for status, n in c.items() if status not in ("agree", "differ")})
        unchecked = f"; not compared (path-examples): {', '.join(f'{s} {n}' for s, n in sorted(left.items()))}" \
            if left else ""
        return (f"{pair:<{width}} {self.examples:>9} {self.checked:>8} {self.failed:>7}  "
                f"compared on: {compared}{unchecked}")


@dataclass
class Failure:
    """One cause, grouped across paths and examples, with its smallest reproducer."""

    signature: str  # the cause's key (records.Cause: its words, path family and kind of difference)
    spec: GraphSpec  # the smallest failing example seen, or the shrunk one
    report: str
    count: int = 1  # examples that showed it
    reproducer: str | None = None
    paths: set[str] = field(default_factory=set)
    size_before: int = 0  # records.spec_size of the first example that showed it
    shrink: str = ""  # "" (not yet), "complete", "time cap", "not reproduced", "not saved", "hypofuzz" (shrunk by the nightly's HypoFuzz)
    replay: str = ""  # replayed first (harness.replay): "still fails", "did not reproduce" or "not saved"
    #: a crash or hang: the choice sequence of the example the worker died on (sent before it
    #: began; base64 text, as records and worker configs carry it), which shrinking saves under
    #: the cause's key; the other causes are saved by the fuzz test itself
    choices: str | None = None

    @property
    def size(self) -> int:
        return spec_size(self.spec)

    @property
    def shrinkable(self) -> bool:
        """Hypothesis can replay its example: a path check's failure or gradcheck's (saved by the
        fuzz test), or a worker's crash or hang whose choice sequence the worker sent."""
        return not self.in_child or self.choices is not None

    @property
    def in_child(self) -> bool:
        """A crash or hang of a worker: each candidate runs in a child process (`_in_child`)."""
        return self.signature.startswith(("crash", "hang"))

    def offer(self, spec: GraphSpec, report: str, choices: str | None = None) -> None:
        """Another example with this cause: kept when it is smaller."""
        if _smaller(spec, self.spec):
            self.spec, self.report, self.choices = spec, report, choices or self.choices


def _smaller(a: GraphSpec, b: GraphSpec) -> bool:
    return (spec_size(a), len(a.to_json())) < (spec_size(b), len(b.to_json()))


@dataclass
class CampaignResult:
    paths: list[str]
    device: str
    examples: int = 0
    with_backward: int = 0  # examples where a backward really runs (compiled autograd's share)
    seconds: float = 0.0  # wall time of every session, fuzzing, shrinking and reports
    fuzz_seconds: float = 0.0  # from each session's start to its last example
    counts: dict[str, PathCounts] = field(default_factory=dict)
    failures: dict[str, Failure] = field(default_factory=dict)
    lifetimes: bool = True
    #: float64 gradcheck of the examples where it is cheap: ok / failed / skipped
    gradcheck: collections.Counter = field(default_factory=collections.Counter)
    #: coverage: for each axis (records.features), examples per value; tensor inputs per Function
    coverage: dict[str, collections.Counter] = field(default_factory=dict)
    inputs: collections.Counter = field(default_factory=collections.Counter)
    #: when each example was recorded (throughput over time)
    times: list[float] = field(default_factory=list)
    check_ms: float = 0.0
    generate_ms: float = 0.0
    sessions: int = 0
    budget_s: float = 0.0
    #: one-time costs not charged to the budget: the native build and the workers' warm-up checks
    uncharged_s: float = 0.0
    #: workers retired at their memory limit (fuzz --worker-memory): count, largest resident bytes
    retirements: int = 0
    retired_resident_bytes: int = 0
    #: the saved failures replayed first (harness.replay): cause -> its latest result, and their time
    replays: dict[str, str] = field(default_factory=dict)
    replay_seconds: float = 0.0
    replay_examples: int = 0
    #: the seeds from known bugs checked first (harness.seeds): seeds, mutants, failed, seconds, available
    seeded: collections.Counter = field(default_factory=collections.Counter)
    #: why the seeds were not used (harness.seeds.seeds_refused), "" when they were
    seeds_refused: str = ""
    #: a campaign of Ray shards (harness.cluster): one row each, node, examples, failures, how it ended
    shards: list[dict[str, Any]] = field(default_factory=list)
    #: the twin-form oracle (harness/oracles/twins.py): whether it ran, and its counts per pair
    twins_on: bool = False
    twins: dict[str, TwinCounts] = field(default_factory=dict)
    #: where the harness itself failed ("harness_error" records): during what, the cause, the error
    harness_errors: list[dict[str, Any]] = field(default_factory=list)
    _session: tuple[float, float, float] = (0.0, 0.0, 0.0)  # start, last record, last example
    _closed: tuple[float, float] = (0.0, 0.0)  # seconds and fuzz_seconds of the sessions before

    # --- the one way counts change: a record -------------------------------------------
    def add_record(self, record: Record) -> None:
        kind = record["kind"]
        if kind == "start":
            self._close_session()
            self.sessions += 1
            self.budget_s += record.get("budget_s", 0.0)
            self.uncharged_s += record.get("uncharged_s", 0.0)
            self.paths, self.device, self.lifetimes = list(record["paths"]), record["device"], record["lifetimes"]
            self.twins_on = record.get("twins", False)
            self._session = (record["t"], record["t"], record["t"])
            return
        start, _, last_example = self._session
        self._session = start, last, last_example = (
            start, record["t"], record["t"] if kind in ("example", "crash") else last_example)
        self.seconds, self.fuzz_seconds = self._closed[0] + last - start, self._closed[1] + last_example - start
        if kind == "example":
            self._add_example(record)
        elif kind == "crash":
            self.examples += 1
            self._add_failure(record["cause"], record, set(record["paths"]))
        elif kind == "replay":
            cause, result = record["cause"], record["result"]
            # an older log's replay dropped an example that no longer failed from its cause's corpus,
            # so a later resume found it "not saved": the earlier result stands
            if not (result == "not saved" and cause in self.replays):
                self.replays[cause] = result
            if cause in self.failures:
                self.failures[cause].replay = self.replays[cause]
        elif kind == "replayed":
            self.replay_seconds += record["seconds"]
            self.replay_examples += record["examples"]
        elif kind == "seeded":
            self.seeded.update({k: record[k] for k in ("seeds", "mutants", "failed", "seconds", "available")})
            self.seeds_refused = record.get("refused", self.seeds_refused)
        elif kind == "shrunk":
            f = self.failures[record["cause"]]
            f.spec, f.report = GraphSpec.from_json(record["spec"]), record["report"]
            f.shrink, f.reproducer = record["result"], record.get("reproducer")
        elif kind == "reproducer":
            self.failures[record["cause"]].reproducer = record["reproducer"]
        elif kind == "warmed":  # a worker's warm-up: the campaign's clock was moved on by extends_s
            self.uncharged_s += record.get("extends_s", 0.0)
        elif kind == "shards":  # a Ray campaign (harness.cluster): its shards ran side by side
            self.shards = record["rows"]
            self.seconds, self.fuzz_seconds, self.budget_s = record["seconds"], record["fuzz_seconds"], record["budget_s"]
            self.sessions = 1
        elif kind == "harness_error":
            self.harness_errors.append({k: record.get(k) for k in ("during", "cause", "error")})
        elif kind == "retired":
            self.retirements += 1
            self.retired_resident_bytes = max(self.retired_resident_bytes, record["resident_bytes"])

    def _add_example(self, record: Record) -> None:
        self.examples += 1
        self.with_backward += record["backward"]
        self.times.append(record["t"])
        self.check_ms += record["check_ms"]
        self.generate_ms += record["generate_ms"]
        self.gradcheck[record["gradcheck"]] += 1
        for axis, values in record["features"].items():
            if axis == "inputs":
                self.inputs.update(values)
            else:
                self.coverage.setdefault(axis, collections.Counter()).update(str(v) for v in values)
        if "twin" in record:
            self.twins.setdefault(record["twin"]["pair"], TwinCounts()).add(record["twin"])
        by_cause: dict[str, set[str]] = {}
        for name, outcome in record["outcomes"].items():
            self.counts.setdefault(name, PathCounts()).add(outcome, backward=bool(record["backward"]))
            if outcome["status"] == "failed":
                by_cause.setdefault(outcome["cause"], set()).add(name)
        if record["gradcheck"] == "failed":
            by_cause[record["gradcheck_cause"]] = set()
        for cause, paths in by_cause.items():  # once per example, however many paths showed it
            self._add_failure(cause, record, paths)

    def _add_failure(self, cause: str, record: Record, paths: set[str]) -> None:
        spec = GraphSpec.from_json(record["spec"])
        choices = record.get("choices")
        if cause in self.failures:
            f = self.failures[cause]
            f.count += 1
            f.paths |= paths
            if not f.shrink:  # a shrunk reproducer is final
                f.offer(spec, record["report"], choices)
        else:
            self.failures[cause] = Failure(cause, spec, record["report"], 1, record.get("reproducer"), paths,
                                           size_before=spec_size(spec), choices=choices)

    def _close_session(self) -> None:
        self._closed = (self.seconds, self.fuzz_seconds)
        self._session = (0.0, 0.0, 0.0)

    def finish(self) -> CampaignResult:
        """Close the last session's times (after its last record)."""
        self._close_session()
        return self

    @classmethod
    def from_records(cls, records: Iterable[Record]) -> CampaignResult:
        result = cls([], "cpu")
        for record in records:
            result.add_record(record)
        return result.finish()

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.fuzz_seconds if self.fuzz_seconds > 0 else 0.0

    def unchecked_paths(self) -> list[str]:
        """The campaign's paths that checked no example (all of them when no example ran)."""
        return [name for name in self.paths if self.counts.get(name, PathCounts()).checked == 0]

    def verdict(self) -> str:
        """The campaign's last line: its failures, or that it found none and where it did not look;
        first, that the harness itself failed, when it did."""
        if self.harness_errors:
            return (f"the harness itself failed {len(self.harness_errors)} time(s) (harness errors above): the "
                    f"campaign's verdict is incomplete; {self._verdict()}")
        return self._verdict()

    def _verdict(self) -> str:
        unchecked = self.unchecked_paths()
        if not self.examples:
            looked = "nothing checked: no example ran within the budget; give fuzz a longer --budget"
        elif unchecked:
            looked = (f"nothing checked on {', '.join(unchecked)}: every example was unsupported, stopped by a "
                      f"known issue or only partly checked there (above); give fuzz a longer --budget")
        else:
            return f"{len(self.failures)} distinct failure cause(s)" if self.failures else "no failures"
        return f"{len(self.failures)} distinct failure cause(s); {looked}" if self.failures else f"no failures, but {looked}"

    @property
    def known(self) -> collections.Counter:
        """Known torch issues hit, over every path (each is counted where it was hit)."""
        total: collections.Counter = collections.Counter()
        for c in self.counts.values():
            total.update(c.known)
        return total

    def as_json(self) -> dict[str, Any]:
        return {
            "torch": torch.__version__,
            "device": self.device,
            "examples": self.examples,
            "examples_with_backward": self.with_backward,
            "seconds": round(self.seconds, 3),
            "uncharged_seconds": round(self.uncharged_s, 3),
            "unchecked_paths": self.unchecked_paths(),
            "fuzz_seconds": round(self.fuzz_seconds, 3),
            "examples_per_second": round(self.examples_per_second, 2),
            "lifetimes": self.lifetimes,
            "twins_on": self.twins_on,
            "twins": {pair: c.as_json() for pair, c in self.twins.items()},
            "gradcheck": dict(self.gradcheck),
            "paths": {name: self.counts.get(name, PathCounts()).as_json(self.examples) for name in self.paths},
            "known_torch_issues": dict(self.known),
            "worker_retirements": self.retirements,
            "retired_resident_bytes": self.retired_resident_bytes,
            "replayed": dict(self.replays),
            "replay_seconds": round(self.replay_seconds, 3),
            "replay_examples": self.replay_examples,
            "seeded": dict(self.seeded),
            **({"seeds_refused": self.seeds_refused} if self.seeds_refused else {}),
            "harness_errors": list(self.harness_errors),
            **({"shards": self.shards} if self.shards else {}),
            "failures": [{"signature": f.signature, "count": f.count, "paths": sorted(f.paths),
                          "reproducer": f.reproducer, "report": f.report, "spec": f.spec.to_json(),
                          "size_before": f.size_before, "size_after": f.size, "shrink": f.shrink,
                          "replay": f.replay}
                         for f in self.failures.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CampaignResult:
        result = cls(list(data["paths"]), data["device"], data["examples"], data["examples_with_backward"],
                     data["seconds"], data.get("fuzz_seconds", data["seconds"]), lifetimes=data["lifetimes"],
                     gradcheck=collections.Counter(data["gradcheck"]))
        result.counts = {name: PathCounts.from_json(c) for name, c in data["paths"].items()}
        result.twins_on = data.get("twins_on", False)
        result.twins = {pair: TwinCounts.from_json(c) for pair, c in data.get("twins", {}).items()}
        result.retirements = data.get("worker_retirements", 0)
        result.retired_resident_bytes = data.get("retired_resident_bytes", 0)
        result.replays = dict(data.get("replayed", {}))
        result.replay_seconds = data.get("replay_seconds", 0.0)
        result.replay_examples = data.get("replay_examples", 0)
        result.seeded = collections.Counter(data.get("seeded", {}))
        result.seeds_refused = data.get("seeds_refused", "")
        result.harness_errors = list(data.get("harness_errors", []))
        for f in data["failures"]:
            result.failures[f["signature"]] = Failure(
                f["signature"], GraphSpec.from_json(f["spec"]), f["report"], f["count"], f["reproducer"],
                set(f["paths"]), f.get("size_before", 0), f.get("shrink", ""), f.get("replay", ""))
        return result

    def summary(self) -> str:
        oracle = "with" if self.lifetimes else "without"
        w = max([18, *map(len, self.paths)])  # the path column, as wide as its longest name
        lines = [f"torch {torch.__version__} on {self.device}: {self.examples} examples "
                 f"({self.with_backward} with a backward) in {self.fuzz_seconds:.1f} s of fuzzing "
                 f"({self.examples_per_second:.1f} examples/s, {oracle} the lifetime oracle), "
                 f"{self.seconds:.1f} s in all"
                 + (f" (and {self.uncharged_s:.1f} s not charged to the budget: the native build, warm-up)"
                    if self.uncharged_s >= 0.05 else ""), "",
                 "checked = ok + failed: compared and judged, on the example or on the workaround variant",
                 "that steps around a known torch issue; partly (not checked): a known issue without a",
                 "workaround damaged part of the run, left unjudged, and the rest agreed; stopped = a known",
                 "issue ended the check.", "",
                 (f"{'path':<{w}} {'checked':>15} {'ok':>7} {'failed':>7} {'partly':>7} {'stopped':>8} "
                  f"{'unsupported':>12}")]
        for name in self.paths:
            c = self.counts.get(name, PathCounts())
            share = f"{c.checked} ({100 * c.checked / self.examples:.0f}%)" if self.examples else "0"
            lines.append(f"{name:<{w}} {share:>15} {c.ok:>7} {c.failed:>7} {c.partly:>7} {c.stopped:>8} "
                         f"{sum(c.unsupported.values()):>12}")
            for reason, n in sorted(c.unsupported.items()):
                lines.append(f"{'':<{w}}   unsupported: {reason} ({n})")
            for issue, n in sorted(c.known.items()):
                lines.append(f"{'':<{w}}   known torch issue hit: {issue} ({n})")
            if c.past_known:
                lines.append(f"{'':<{w}}   checked past a known issue on its workaround: {c.past_known}")
            if c.uncompared_examples:
                lines.append(f"{'':<{w}}   {c.uncompared_line()}")
            lines += [f"{'':<{w}}   {line}" for line in c.trace_lines()]
            if name.startswith("compiled") and self.with_backward:  # it can only check a backward
                lines.append(f"{'':<{w}}   checked {100 * c.checked / self.with_backward:.0f}% of the "
                             f"{self.with_backward} examples where a backward runs")
        lines += self.twin_lines()
        g = self.gradcheck
        lines += ["", f"float64 gradcheck (examples of at most {CAMPAIGN_GRADCHECK_ELEMENTS} input elements): "
                      f"{g['ok']} ok, {g['failed']} failed, {g['skipped']} skipped"]
        if self.retirements:
            lines += ["", f"worker retirements: {self.retirements} ({self.retirements_note()})"]
        if self.shards:
            lines += ["", f"{'shard':<6} {'node':<32} {'examples':>9} {'failures':>9}  ended"]
            lines += [f"{s['shard']:<6} {s['node']:<32} {s['examples']:>9} {s['failures']:>9}  {s['ended']}"
                      for s in self.shards]
        if self.seeded or self.seeds_refused:
            lines += ["", self.seed_note()]
        if self.replays:
            lines += ["", self.replay_note() + ":"]
            lines += [f"  {result}: {cause}" for cause, result in self.replays.items()]
        if self.harness_errors:
            lines += ["", "harness errors (the harness itself failed, not torch; what it was doing is unknown):"]
            for e in self.harness_errors:
                lines.append(f"  while {e['during']}" + (f" {e['cause']}" if e.get("cause") else "") + ":")
                lines += [f"     {line}" for line in str(e["error"]).splitlines()]
        if self.failures:
            lines += ["", f"{self.verdict()}:"]
            for f in self.failures.values():
                lines.append(f"  x{f.count} on {','.join(sorted(f.paths)) or '-'}: {f.signature}")
                lines.append(f"     size {f.size_before} -> {f.size} ({shrink_note(f)})"
                             + (f"; replayed: {f.replay}" if f.replay else ""))
                if f.reproducer:
                    lines.append(f"     reproducer: {f.reproducer}")
        else:
            lines += ["", self.verdict()]
        return "\n".join(lines)


    def twin_lines(self) -> list[str]:
        """The twin-form oracle's counts per pair (docs/twins.md), or that it was off."""
        if not self.twins_on:
            return ["", "twin-form oracle: off (--no-twins)"]
        from harness.oracles.twins import PAIR_NAMES

        w = max(map(len, PAIR_NAMES))
        lines = ["", "twin-form oracle (docs/twins.md): examples = those whose twin flipped that pair; checked = "
                     "compared on at least one path", f"{'pair':<{w}} {'examples':>9} {'checked':>8} {'failed':>7}"]
        lines += [self.twins.get(pair, TwinCounts()).line(pair, w) if pair in self.twins else
                  f"{pair:<{w}} {0:>9} {0:>8} {0:>7}" for pair in PAIR_NAMES]
        return lines

    def replay_note(self) -> str:
        """The saved failures replayed first, and what that cost apart from fuzzing."""
        outcomes = collections.Counter(self.replays.values())
        return (f"replayed first: {len(self.replays)} saved failure cause(s) "
                f"({', '.join(f'{result}: {n}' for result, n in sorted(outcomes.items()))}), "
                f"{self.replay_examples} example(s) in {self.replay_seconds:.1f} s; fuzzing had the rest "
                f"of the budget")

    def seed_note(self) -> str:
        """The seeds from known bugs checked first (harness.seeds), and what that cost."""
        if self.seeds_refused:
            return f"not started from known bugs: {self.seeds_refused}"
        s = self.seeded
        return (f"started from known bugs: {s['seeds']} seed(s) of {s['available']} for these paths and "
                f"{s['mutants']} mutant(s) of them, {s['failed']} with a failure no known torch issue explains, "
                f"in {s['seconds']:.1f} s (harness/seeds.py)")

    def retirements_note(self) -> str:
        return (f"a worker reached its memory limit, largest resident {self.retired_resident_bytes / 2**30:.2f} GiB, "
                f"and a fresh one went on; docs/worker_memory.md")


def shrink_note(f: Failure) -> str:
    if not f.shrinkable:
        return "the smallest example seen; not shrunk: the worker sent no choice sequence"
    return {"complete": "shrunk", "time cap": "shrunk until its time cap",
            "not reproduced": "not shrunk: the saved example no longer fails",
            "not saved": "not shrunk: no saved example in the database",
            HARNESS_ERROR: "not shrunk: the harness itself failed (harness errors below)",
            "hypofuzz": "shrunk by HypoFuzz (python -m harness nightly)"}.get(f.shrink, "not shrunk: out of budget")


def signature(outcome: Any) -> str:
    """The cause of a failed path outcome (kept under its old name; see records.cause_of)."""
    return cause_of(outcome)


def example_record(spec: GraphSpec, verdict: Verdict, gradcheck: tuple[str, str], *, generate_ms: float,
                   check_ms: float, worker: str = "", key: str | None = None) -> Record:
    """key: spec_hash(spec), when the caller has it already."""
    causes = causes_of(verdict.outcomes.values())
    outcomes = {name: outcome_record(o, causes.get(name)) for name, o in verdict.outcomes.items()}
    record: Record = {"kind": "example", "t": now(), "worker": worker, "hash": key or spec_hash(spec),
                      "outcomes": outcomes, "backward": has_backward(spec), "gradcheck": gradcheck[0],
                      "generate_ms": round(generate_ms, 3), "check_ms": round(check_ms, 3),
                      "features": features(spec)}
    if verdict.twin is not None:
        record["twin"] = verdict.twin.as_record()
    if gradcheck[0] == "failed":
        record["gradcheck_cause"] = gradcheck_cause(gradcheck)
    if verdict.failed or gradcheck[0] == "failed":  # what a failure group needs to show and replay it
        record["spec"] = spec.to_json()
        record["report"] = verdict.report() if verdict.failed else f"gradcheck failed: {gradcheck[1]}"
    return record


def gradcheck_cause(gradcheck: tuple[str, str]) -> str | None:
    """The cause of a failed gradcheck (gradcheck_verdict's result), numbers left out."""
    return f"{GRADCHECK_CAUSE}: {_numbers_out(gradcheck[1])}" if gradcheck[0] == "failed" else None


def crash_cause(what: str, path_names: Iterable[str]) -> str:
    """The cause of a worker's death on an example: "crash (signal SIGSEGV)", "hang (no
    progress for 300 s)", "crash (exit code 3)"; the paths it was checking."""
    return f"{what} while checking paths {','.join(path_names)}"


def current_choices() -> str:
    """The choice sequence of the example the running Hypothesis test is on, as the example
    database stores it (base64 text, for records), so that a parent can shrink the example a
    worker died on."""
    from hypothesis.control import current_build_context
    from hypothesis.database import choices_to_bytes

    return base64.b64encode(choices_to_bytes(current_build_context().data.choices)).decode()


def _numbers_out(text: str) -> str:
    return re.sub(r"[-+]?\d[\d.e+-]*", "N", text)[:160]


# --- Hypothesis: one test shape for fuzzing, replaying and shrinking ------------------------


class CauseDatabase(ExampleDatabase):
    """Hypothesis' example database, with every key put under a failure cause.

    With `unshrunk=True` (fuzzing, replaying) every example Hypothesis saves goes to each
    cause's *secondary* corpus: examples that showed a bug but are not minimal. From the
    primary corpus Hypothesis would take it as already shrunk, and skip shrinking it. In the
    fuzz test the causes are set just before the test raises. Shrinking a cause reads and
    writes its keys as Hypothesis does, so its primary corpus holds the shrunk example.

    With `failures_first=True` (fuzzing) a failing example is also kept under FAILURES_FIRST,
    which is what the fuzz test reads while no cause is set: the next campaign sharing the
    database (a folder, or Redis across machines) replays every failure found so far before it
    generates anything (harness.replay). They stay there (a fixed one costs one example per
    campaign), and each one's causes are kept beside it (`causes_key`), so that a campaign can
    say which cause no longer reproduces."""

    FAILURES_FIRST = b"failures-first/"

    def __init__(self, base: ExampleDatabase, causes: Iterable[str] = (), *, unshrunk: bool = False,
                 failures_first: bool = False) -> None:
        super().__init__()
        self.base, self.causes, self.unshrunk, self.failures_first = base, list(causes), unshrunk, failures_first

    @staticmethod
    def prefix(cause: str) -> bytes:
        return hashlib.sha1(cause.encode()).hexdigest()[:20].encode() + b"/"

    @classmethod
    def causes_key(cls, value: bytes) -> bytes:
        """The key holding the causes a FAILURES_FIRST example was saved for (each a value)."""
        return cls.FAILURES_FIRST + b"causes/" + hashlib.sha1(value).hexdigest()[:20].encode()

    def _keys(self, key: bytes) -> list[bytes]:
        if self.failures_first and not self.causes:
            return [self.FAILURES_FIRST + key]
        return [self.prefix(c) + key for c in self.causes]

    def save(self, key: bytes, value: bytes) -> None:
        for k in self._keys(key):
            self.base.save(k + b".secondary" if self.unshrunk else k, value)
        if self.failures_first and self.causes:
            self.base.save(self.FAILURES_FIRST + key, value)
            for cause in self.causes:
                self.base.save(self.causes_key(value), cause.encode())

    def fetch(self, key: bytes) -> Iterable[bytes]:
        for k in self._keys(key):
            yield from self.base.fetch(k)

    def delete(self, key: bytes, value: bytes) -> None:
        for k in self._keys(key):
            if not k.startswith(self.FAILURES_FIRST):  # a failure stays to be replayed by every campaign
                self.base.delete(k, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        for s, d in zip(self._keys(src), self._keys(dest)):
            self.base.move(s, d, value)


class _Found(Exception):
    """Raised in a Hypothesis test to mark its example as failing (so it is saved or shrunk)."""


class HarnessError(Exception):
    """The harness itself failed (an oracle, the decoder, a comparison) while replaying, shrinking or
    checking: never a finding about torch, and never "did not reproduce"."""


class _HarnessFailed(KeyboardInterrupt):
    """Carries a harness error out of a Hypothesis test at once: Hypothesis lets KeyboardInterrupt
    through, where it would shrink any other exception as a bug of the checked code."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def harness_error_record(during: str, error: BaseException, cause: str | None = None,
                         spec: GraphSpec | None = None) -> Record:
    """A "harness_error" record: what the harness was doing (and on which cause or example), and its
    error with the end of its traceback. The campaign exits 2 (cli.campaign_status)."""
    cause_error = error.__cause__ if isinstance(error, HarnessError) and error.__cause__ is not None else error
    shown = "".join(traceback.format_exception(cause_error)[-6:]).rstrip()
    record: Record = {"kind": "harness_error", "t": now(), "during": during, "cause": cause, "error": shown}
    if spec is not None:
        record["spec"] = spec.to_json()
    return record


class _Stop(Exception):
    """Raised in the fuzz test when its time or example count is spent, to end the batch."""


class _TimeUp(KeyboardInterrupt):
    """A cause's shrinking time is spent. Hypothesis lets KeyboardInterrupt through at once,
    without saving the example it was on (any other exception would be shrunk as a bug of its
    own); its best so far is already in the database and in our hands."""


def favours_torch_func(paths: list[ExecPath]) -> bool:
    """Whether a campaign over `paths` draws graphs for torch.func (graphs(favour_torch_func=True):
    mostly setup_context style, with vmap rules): when one of them is a torch.func path
    (`runs_torch_func`), which refuses the others."""
    return any(getattr(p, "runs_torch_func", False) for p in paths)


def favours_dynamo(paths: list[ExecPath]) -> bool:
    """Whether a campaign over `paths` draws graphs for torch.compile (graphs(favour_dynamo=True):
    most of them traceable by Dynamo): when one of them compiles the forward (`runs_dynamo`)."""
    return any(getattr(p, "runs_dynamo", False) for p in paths)


#: graphs() options of a campaign (`drawing`)
Drawing = dict[str, bool]


def drawing(paths: list[ExecPath]) -> Drawing:
    """The graphs() options of a campaign over `paths`. Fuzzing, replaying and shrinking must
    draw with the same options, or a saved choice sequence decodes to another graph."""
    return {"favour_torch_func": favours_torch_func(paths), "favour_dynamo": favours_dynamo(paths)}


def needs_backward(paths: list[ExecPath]) -> bool:
    """Whether every path of a campaign checks nothing without a backward (compiled autograd):
    then it skips the graphs without one (`has_backward`), which would only be counted
    unsupported on every path (about half of them), and checks twice as many examples."""
    return bool(paths) and all(getattr(p, "needs_backward", False) for p in paths)


def graph_strategy(device: str, drawn: Drawing):
    """The graphs() every campaign test draws from (harness.replay decodes saved examples with it).
    _graph_test spells it out: the example database's key is a digest of its source, decorators
    included, so that line must not change (every database saved before would be lost)."""
    return strategies.graphs(mixed_device=is_cuda(device), **drawn)


def _graph_test(body: Callable[[GraphSpec], None], device: str, drawn: Drawing,
                **options: Any) -> Callable[[], None]:
    """A Hypothesis test over graphs() (with CPU scalars beside CUDA leaves on a CUDA device).
    Every test made here has the same database key (the key is a digest of this inner
    function), so fuzzing, replaying and shrinking meet there; they must draw from the same
    graphs() (the campaign's `drawing`), so that a saved example decodes again."""
    # (the @given line is part of that key, so it reads as it did before favour_dynamo: the
    # other options come in through this `graphs`)
    graphs = functools.partial(strategies.graphs, **{k: v for k, v in drawn.items() if k != "favour_torch_func"})
    favour_torch_func = drawn["favour_torch_func"]

    @settings(deadline=None, suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
              derandomize=False, **options)
    @given(graphs(mixed_device=is_cuda(device), favour_torch_func=favour_torch_func))  # as graph_strategy()
    def graph_example(spec: GraphSpec) -> None:
        body(spec)
    return graph_example


def fuzz(paths: list[ExecPath], *, until: float, device: str, database: ExampleDatabase, lifetimes: bool,
         on_record: OnRecord, known: set[str], max_examples: int | None = None,
         on_example: Callable[[GraphSpec], None] | None = None, worker: str = "",
         until_failure: bool = False, should_stop: Callable[[], bool] | None = None, twins: bool = False) -> None:
    """Check generated examples until `until` (time.perf_counter()), max_examples, should_stop()
    or, with until_failure, the first example that fails; each is one record. An example with
    a cause not in `known` is saved in `database` under that cause (and the cause becomes known).
    The failures saved in `database` before are not replayed here: harness.replay does that first."""
    checked = [0]
    checked_specs: set[str] = set()  # their spec hashes
    failed = [False]
    pending: list[GraphSpec] = []  # the example the test raised on, which Hypothesis replays once
    last_end = [time.perf_counter()]
    db = CauseDatabase(database, unshrunk=True, failures_first=True)
    only_backward = needs_backward(paths)
    # A full gc.collect() costs ~80 ms with torch imported; once everything imported so far
    # is frozen out of the collector, the lifetime oracle's collections cost ~0.01 ms.
    gc.collect()
    gc.freeze()

    def more() -> bool:
        return (time.perf_counter() < until and (max_examples is None or checked[0] < max_examples)
                and not (until_failure and failed[0]) and not (should_stop is not None and should_stop()))

    def one_example(spec: GraphSpec) -> None:
        if pending and spec == pending[0]:
            raise _Found  # Hypothesis' final replay of the example we raised on
        if not more():
            raise _Stop  # ends the batch now (and again on Hypothesis' replay); nothing is saved
        if only_backward and not has_backward(spec):
            reject()  # every path would call it unsupported: not an example of this campaign
        key = spec_hash(spec)
        if key in checked_specs:
            # checked already: every batch starts again from the simplest graph (Hypothesis' first
            # examples), which would otherwise be about 8% of a campaign's examples
            return
        checked_specs.add(key)
        if on_example is not None:
            on_example(spec)
        try:
            record = check_example(spec, paths, device, lifetimes,
                                   generate_ms=1000 * (time.perf_counter() - last_end[0]), worker=worker, key=key,
                                   twins=twins)
        except Exception as e:  # noqa: BLE001 -- the harness's own error (torch's are results): recorded, never shrunk as a finding
            on_record(harness_error_record("checking an example", e, spec=spec))
            raise _HarnessFailed(e) from e
        checked[0] += 1
        on_record(record)
        last_end[0] = time.perf_counter()
        causes = record_causes(record)
        failed[0] = bool(causes)
        new = causes - known
        if new:
            known.update(new)
            db.causes, pending[:] = sorted(new), [spec]
            raise _Found

    # the failures saved before (a shared database's) are replayed before fuzz by harness.replay, outside
    # this engine: Hypothesis' own reuse phase raises Flaky on a saved example that no longer fails
    batch = _graph_test(one_example, device, drawing(paths), max_examples=BATCH, database=db,
                        phases=[Phase.explicit, Phase.generate])
    while more():
        db.causes = []  # an example is saved only under the new causes it raised for
        try:
            batch()
        except _Found:
            pending.clear()
        except _Stop:
            return
        except _HarnessFailed:  # recorded; the next batch goes on
            pass
        last_end[0] = time.perf_counter()


def check_example(spec: GraphSpec, paths: list[ExecPath], device: str, lifetimes: bool, *, generate_ms: float,
                  worker: str = "", key: str | None = None, twins: bool = False) -> Record:
    """Check one example on every path (with its twin, harness/oracles/twins.py, where `twins`)
    and with gradcheck: its "example" record."""
    started = time.perf_counter()
    verdict = check(spec, paths, device, lifetimes=lifetimes, twins=twins)
    checked_at = time.perf_counter()
    gradcheck = gradcheck_verdict(spec, device)
    return example_record(spec, verdict, gradcheck, generate_ms=generate_ms, check_ms=1000 * (checked_at - started),
                          worker=worker, key=key)


def record_causes(record: Record) -> set[str]:
    """The failure causes an example record shows: its paths' and gradcheck's."""
    causes = {o["cause"] for o in record["outcomes"].values() if o["status"] == "failed"}
    if record["gradcheck"] == "failed":
        causes.add(record["gradcheck_cause"])
    return causes


def shrink(failure: Failure, paths: list[ExecPath], device: str, database: ExampleDatabase, lifetimes: bool,
           *, until: float, drawn: Drawing | None = None, seen: dict | None = None) -> tuple[GraphSpec, str]:
    """(the smallest failing spec found, how shrinking ended) for one cause, by Hypothesis'
    shrinker from the example saved when the cause was found, stopped at `until`.
    drawn: the campaign's graphs() options (its whole path list's `drawing`), else those of `paths`.
    seen: filled with the verdict of each candidate checked on the paths (see `shows`)."""
    best = [failure.spec]

    def same_cause(spec: GraphSpec) -> None:
        if time.perf_counter() > until:
            raise _TimeUp
        try:
            found = shows(failure, spec, paths, device, lifetimes, until=until, seen=seen)
        except Exception as e:  # noqa: BLE001 -- the harness's own error: out of the engine at once
            raise _HarnessFailed(e) from e
        if found:
            if _smaller(spec, best[0]):
                best[0] = spec
            raise _Found

    test = _graph_test(same_cause, device, drawing(paths) if drawn is None else drawn, database=_saved(failure, database),
                       phases=[Phase.reuse, Phase.shrink], report_multiple_bugs=False)
    try:
        test()
    except _Found:
        return best[0], "complete"
    except _TimeUp:
        return best[0], "time cap"
    except _HarnessFailed as e:
        raise HarnessError(f"shrinking {failure.signature!r}: {type(e.error).__name__}: {e.error}") from e.error
    except unittest.SkipTest:
        return best[0], "not saved"
    except Flaky:  # a flaky cause: its example failed once, and not when Hypothesis replayed it last
        return best[0], "not reproduced"
    except Exception as e:  # the engine itself raised: drawing a candidate (the decoder) failed
        raise HarnessError(f"shrinking {failure.signature!r}: {type(e).__name__}: {e}") from e
    return best[0], "not reproduced"


def shows(failure: Failure, spec: GraphSpec, paths: list[ExecPath], device: str, lifetimes: bool, *,
          until: float | None = None, seen: dict | None = None) -> bool:
    """Does `spec` show the failure's cause: the paths' check, gradcheck, or (in a child
    process, which may die) the worker's crash or hang. seen: where the paths' verdict is kept, by
    spec (the reproducer of the shrunk spec is written from it). What the check raises is the
    harness's own error (torch's are results) and propagates: it never reads as "does not show it"."""
    if failure.signature.startswith(GRADCHECK_CAUSE):
        return gradcheck_cause(gradcheck_verdict(spec, device)) == failure.signature
    if failure.in_child:
        return _in_child(failure, spec, paths, device, lifetimes, until) == failure.signature
    verdict = check(spec, paths, device, lifetimes=lifetimes, twins=twins_of_cause(failure.signature))
    if seen is not None:
        seen[spec] = verdict
    return any(same_cause(failure.signature, cause, failure.paths) for cause in _causes(verdict))


#: the exit status of a child whose check raised (the harness's own error; torch's are results)
_CHILD_RAISED = 70
#: "hang (no progress for 300 s)": how long a candidate may run before it counts as that hang
_HANG = re.compile(r"^hang \(no progress for (\d+) s\)")


def _in_child(failure: Failure, spec: GraphSpec, paths: list[ExecPath], device: str, lifetimes: bool,
              until: float | None) -> str | None:
    """Check `spec` in a forked child (this process has torch imported and warm): the crash
    cause it dies with, a hang cause if it runs past the failure's hang time (or `until`), or
    None when it checks the example and exits."""
    hang = _HANG.match(failure.signature)
    deadline = time.perf_counter() + (float(hang[1]) if hang else 600.0)
    pid = os.fork()
    if pid == 0:  # the child: check, and leave without running any of the parent's exit code
        code = 0
        try:
            torch.set_num_threads(1)  # OpenMP's pool is the parent's; these graphs are tiny
            check(spec, paths, device, lifetimes=lifetimes, twins=twins_of_cause(failure.signature))
        except BaseException:  # noqa: BLE001 -- an exception is no crash (the harness's own error): the exit code says so
            traceback.print_exc()
            code = _CHILD_RAISED
        os._exit(code)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() > deadline or (until is not None and time.perf_counter() > until):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return failure.signature if hang and time.perf_counter() > deadline else None
        time.sleep(0.01)
    if os.WIFSIGNALED(status):
        what = f"crash (signal {signal.Signals(os.WTERMSIG(status)).name})"
    elif os.WEXITSTATUS(status) == _CHILD_RAISED:
        raise HarnessError("checking a candidate in a child process raised (its traceback is on stderr)")
    elif os.WEXITSTATUS(status) != 0:
        what = f"crash (exit code {os.WEXITSTATUS(status)})"
    else:
        return None
    return crash_cause(what, failure.signature.partition(" while checking paths ")[2].split(","))


def _saved(failure: Failure, database: ExampleDatabase, *, unshrunk: bool = False) -> CauseDatabase:
    """The database under the failure's cause; a crash's choice sequence saved there first
    (the worker died before Hypothesis could save it)."""
    db = CauseDatabase(database, [failure.signature], unshrunk=unshrunk)
    if failure.choices is not None:
        db.save(graph_test_key(), base64.b64decode(failure.choices))
    return db


def graph_test_key() -> bytes:
    """The example-database key of every test _graph_test makes (Hypothesis' digest of the test
    function, which is the same inner function for all of them)."""
    from hypothesis.internal.reflection import function_digest

    return function_digest(_graph_test(lambda spec: None, "cpu", drawing([])).hypothesis.inner_test)


def warm_up(paths: list[ExecPath], device: str, lifetimes: bool) -> None:
    """Check one small graph, so that a fresh process's first real check does not pay for the
    imports and caches torch fills on first use (seconds, under load)."""
    from harness.spec import Arg, FunctionSpec, LeafSpec, OutputSpec, Term

    # Forward AD's first op on a tangent-less operand goes through torch._refs, which imports
    # torch._dynamo (~1 s). The math oracle avoids those ops (generic._computed), but a mask or an
    # output of constants alone still meets one now and then: import it here, not in an example.
    import torch._dynamo  # noqa: F401

    spec = GraphSpec(leaves=(LeafSpec(),), forward_ad=True, functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "sin"),)),), save=("inputs",),
                     jvp=True),))
    check(spec, paths, device, lifetimes=lifetimes)
    gradcheck_verdict(spec, device)


def twins_of_cause(cause: str) -> str | bool:
    """check()'s twins option that shows `cause` again: the pair it names (a failure against a
    twin: the same pair, whichever the spec's hash would choose once shrunk), else none."""
    from harness.oracles.twins import pair_of_cause

    return pair_of_cause(cause) or False


def checked_paths(failure: Failure, paths: list[ExecPath]) -> list[ExecPath]:
    """The paths a cause's examples are checked on again (shrinking, replaying): those it was
    seen on, and eager where the campaign runs it, since a difference eager shows too is
    eager's cause (records.causes_of): the cause is told as it was when found."""
    return [p for p in paths if p.name in failure.paths or p.name == "eager"]


def _causes(verdict: Verdict) -> set[str]:
    return set(causes_of(verdict.outcomes.values()).values())


def shrink_failures(failures: list[Failure], paths: list[ExecPath], device: str, database: ExampleDatabase,
                    lifetimes: bool, *, until: float, out_dir: str | Path, on_record: OnRecord,
                    name_prefix: str = "") -> None:
    """Shrink each cause and write its reproducer, one "shrunk" record each, by `until`."""
    todo = [f for f in failures if f.shrinkable and not f.shrink]
    for i, failure in enumerate(todo):
        share = (until - time.perf_counter()) / (len(todo) - i)  # a fast cause leaves more to the rest
        if share <= 0:
            return
        cause_until = time.perf_counter() + share
        failing = [p for p in paths if p.name in failure.paths]
        try:
            shrunk = _shrunk_with_reproducer(failure, failing, paths, device, database, lifetimes,
                                             until=time.perf_counter() + SHRINK_PART * share, cause_until=cause_until,
                                             out_dir=out_dir, name_prefix=name_prefix)
        except Exception as e:  # noqa: BLE001 -- the harness's own error: recorded, the next cause goes on
            on_record(harness_error_record("shrinking", e, cause=failure.signature))
            shrunk = (failure.spec, HARNESS_ERROR, failure.report, None)
        spec, how, report, destination = shrunk
        on_record({"kind": "shrunk", "t": now(), "cause": failure.signature, "result": how,
                   "spec": spec.to_json(), "report": report, "reproducer": destination and str(destination),
                   "size_before": failure.size_before, "size_after": spec_size(spec)})


def _shrunk_with_reproducer(failure: Failure, failing: list[ExecPath], paths: list[ExecPath], device: str,
                            database: ExampleDatabase, lifetimes: bool, *, until: float, cause_until: float,
                            out_dir: str | Path, name_prefix: str) -> tuple[GraphSpec, str, str, Path | None]:
    """One cause shrunk (until `until`) and its reproducer written and reduced (until `cause_until`):
    (spec, how shrinking ended, report, reproducer)."""
    seen: dict[GraphSpec, Verdict] = {}
    spec, how = shrink(failure, checked_paths(failure, paths), device, database, lifetimes, until=until,
                       drawn=drawing(paths), seen=seen)
    destination = Path(out_dir) / reproducer_name(failure.signature, name_prefix)
    if failure.in_child:  # checked here, the example would kill this process: its script runs in a child
        report = failure.report
        write_crash_reproducer(spec, [p.name for p in failing], device, report, destination, until=cause_until)
    elif failure.signature.startswith(GRADCHECK_CAUSE):
        report = f"gradcheck failed: {gradcheck_verdict(spec, device)[1]}"
        write_gradcheck_reproducer(spec, device, report, destination, until=cause_until)
    else:
        twins = twins_of_cause(failure.signature)
        verdict = seen.get(spec) or check(spec, failing, device, lifetimes=lifetimes, twins=twins)
        report = verdict.report()
        write_reproducer(spec, [p.name for p in failing], device, report, destination, verdict=verdict,
                         twins=twins, until=cause_until)
    return spec, how, report, destination


def write_unshrunk_reproducers(result: CampaignResult, out_dir: str | Path, on_record: OnRecord) -> None:
    """A reproducer for each cause that has none yet (its shrinking ran out of budget): the
    smallest example seen, written as it is (no check, so it costs no budget to speak of)."""
    for f in result.failures.values():
        if f.reproducer is None and f.paths:
            destination = Path(out_dir) / reproducer_name(f.signature)
            write_reproducer(f.spec, sorted(f.paths), result.device, f.report, destination,
                             twins=twins_of_cause(f.signature))
            on_record({"kind": "reproducer", "t": now(), "cause": f.signature, "reproducer": str(destination)})


def to_shrink(result: CampaignResult) -> list[Failure]:
    """The causes still to shrink: fuzzing leaves them the last SHRINK_SHARE of the budget
    (and, when there are none, fuzzes on to the end)."""
    return [f for f in result.failures.values() if f.shrinkable and not f.shrink]


def reproducer_name(cause: str, prefix: str = "") -> str:
    """The file name of a cause's reproducer in a campaign folder (one file per cause, whichever
    engine found it: run_campaign, the workers or the nightly's HypoFuzz property)."""
    return f"{prefix}failure_{hashlib.sha1(cause.encode()).hexdigest()[:8]}.py"


def run_campaign(paths: list[ExecPath], *, budget_s: float, device: str = "cpu",
                 out_dir: str | Path = "failures", database: ExampleDatabase | None = None,
                 max_examples: int | None = None, lifetimes: bool = True,
                 result: CampaignResult | None = None, on_record: OnRecord | None = None,
                 on_example: Callable[[GraphSpec], None] | None = None,
                 on_progress: Callable[[CampaignResult], None] | None = None,
                 name_prefix: str = "", until_failure: bool = False, replay_shared: bool = True,
                 uncharged_s: float = 0.0, seeds: bool = False,
                 twins: bool = False) -> CampaignResult:
    """A campaign in this process: replay the failures `result` already holds (a resumed
    campaign) and, with replay_shared, those saved in `database` by earlier campaigns
    (harness.replay), with `seeds` start from the known bugs' seeds (harness.seeds; not on a resumed
    campaign, nor without replay_shared: a Ray shard but the first), fuzz, then shrink each new
    cause, all within `budget_s`. Each record goes to
    `result` and then to on_record (the log, the progress display); on_example sees each spec
    before it is checked and on_progress the result after each example. uncharged_s: one-time
    costs the caller kept out of the budget (the native build, a warm-up), for the summary.
    twins: check each example's twin in another Function form too (harness/oracles/twins.py;
    `fuzz` turns it on unless --no-twins)."""
    from harness.replay import replay_first

    start = time.perf_counter()
    end = start + budget_s
    database = database if database is not None else InMemoryExampleDatabase()
    result = result if result is not None else CampaignResult([p.name for p in paths], device,
                                                              lifetimes=lifetimes)

    def record(rec: Record) -> None:
        result.add_record(rec)
        if on_record is not None:
            on_record(rec)
        if on_progress is not None and rec["kind"] == "example":
            on_progress(result)

    record({"kind": "start", "t": now(), "paths": [p.name for p in paths], "device": device,
            "torch": torch.__version__, "budget_s": budget_s, "lifetimes": lifetimes, "twins": twins,
            "resumed": bool(result.examples), "uncharged_s": uncharged_s})
    known = set(result.failures)
    replay_first(list(result.failures.values()), paths, device, database, lifetimes, until=end, on_record=record,
                 known=known, shared=replay_shared, twins=twins,
                 on_example=None if on_example is None else lambda spec, choices: on_example(spec))
    if seeds and replay_shared and not result.examples:
        from harness.seeds import check_seeds, seeds_until

        check_seeds(paths, device, database, lifetimes, until=seeds_until(end), on_record=record, known=known,
                    on_example=None if on_example is None else lambda spec, choices: on_example(spec), twins=twins)
    fuzz_end = start + budget_s * (1 - SHRINK_SHARE)
    fuzz(paths, until=end, device=device, database=database, lifetimes=lifetimes, on_record=record,
         known=known, max_examples=max_examples, on_example=on_example,
         until_failure=until_failure, twins=twins,
         should_stop=lambda: time.perf_counter() >= fuzz_end and bool(to_shrink(result)))
    shrink_failures(list(result.failures.values()), paths, device, database, lifetimes, until=end,
                    out_dir=out_dir, on_record=record, name_prefix=name_prefix)
    write_unshrunk_reproducers(result, out_dir, record)
    record({"kind": "end", "t": now()})
    return result.finish()


__all__ = ["HARNESS_ERROR", "CampaignResult", "CauseDatabase", "Failure", "HarnessError", "PathCounts", "TwinCounts",
           "check_example", "checked_paths", "example_record", "fuzz", "harness_error_record", "record_causes",
           "reproducer_name", "run_campaign", "shrink", "shrink_failures", "signature", "to_shrink", "twins_of_cause",
           "write_unshrunk_reproducers"]
