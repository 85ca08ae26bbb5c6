"""A campaign's results: per-path counts, failure causes and their summary, rebuilt from records.

Everything a campaign learns is a record (harness/records.py), and its counts are rebuilt from
records only (`CampaignResult.add_record`), live, from the log (`fuzz --resume`, `report`) or
from the shards of a parallel or Ray campaign.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from harness.oracles.math import CAMPAIGN_GRADCHECK_ELEMENTS
from harness.paths.tracing import EXAMPLE_TRACES
from harness.records import HARNESS_ERROR, Record, cause_of, spec_size
from harness.spec import GraphSpec


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
    #: the examples this path ran (fewer than the campaign's for a compiling path: harness.split)
    examples: int = 0

    @property
    def checked(self) -> int:
        return self.ok + self.failed

    def add(self, outcome: Record, backward: bool = False) -> None:
        """One path's outcome record (records.outcome_record) of an example (`backward`: one
        where a backward runs)."""
        status, known = outcome["status"], outcome.get("known", [])
        self.examples += 1
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

    def as_json(self) -> dict[str, Any]:
        return {"examples": self.examples, "checked": self.checked,
                "checked_share": round(self.checked / self.examples, 4) if self.examples else 0.0, "ok": self.ok, "partly": self.partly, "failed": self.failed, "stopped_by_known": self.stopped,
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
                   data.get("uncompared_examples", 0),
                   data.get("examples", data["ok"] + data["failed"] + data.get("partly", 0) + data["stopped_by_known"]
                            + sum(data["unsupported"].values())))

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
    twin it was, those compared on at least one path (`checked`: ok or failed there) and
    those that failed on at least one; per path, how often each status came up, unsupported
    counted by why it was not compared (TwinPathResult.counted_as)."""

    examples: int = 0
    checked: int = 0
    failed: int = 0
    paths: dict[str, collections.Counter] = field(default_factory=dict)

    #: the words of logs written before the twins took the campaign's statuses
    OLD_WORDS = {"agree": "ok", "differ": "failed"}

    def add(self, twin: Record) -> None:
        """One example record's "twin" (TwinCheck.as_record)."""
        from harness.oracles.twins import CHECKED

        statuses = {path: self.OLD_WORDS.get(s, s) for path, s in twin["paths"].items()}
        self.examples += 1
        self.checked += any(s in CHECKED for s in statuses.values())
        self.failed += "failed" in statuses.values()
        for path, status in statuses.items():
            self.paths.setdefault(path, collections.Counter())[status] += 1

    def as_json(self) -> dict[str, Any]:
        return {"examples": self.examples, "checked": self.checked, "failed": self.failed,
                "paths": {path: dict(c) for path, c in self.paths.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TwinCounts:
        return cls(data["examples"], data["checked"], data["failed"],
                   {path: collections.Counter({cls.OLD_WORDS.get(s, s): n for s, n in c.items()})
                    for path, c in data["paths"].items()})

    def line(self, pair: str, width: int) -> str:
        from harness.oracles.twins import CHECKED

        compared = ", ".join(f"{path} {sum(c[s] for s in CHECKED)}" for path, c in self.paths.items())
        left = collections.Counter()
        for c in self.paths.values():
            left.update({status: n for status, n in c.items() if status not in CHECKED})
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
        """A crash or hang of a worker: each candidate runs in a child process (harness.shrink `_in_child`)."""
        return self.signature.startswith(("crash", "hang"))

    def offer(self, spec: GraphSpec, report: str, choices: str | None = None) -> None:
        """Another example with this cause: kept when it is smaller."""
        if smaller(spec, self.spec):
            self.spec, self.report, self.choices = spec, report, choices or self.choices


def smaller(a: GraphSpec, b: GraphSpec) -> bool:
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
    #: the budget split of fuzzed examples (harness.split): per compiling family run ("" for the cheap
    #: paths alone), [examples, seconds of their checks]; empty when every path ran every example
    split: dict[str, list[float]] = field(default_factory=dict)
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
        if "family" in record:
            tally = self.split.setdefault(record["family"], [0, 0.0])
            tally[0] += 1
            tally[1] += record["check_ms"] / 1000
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
            "paths": {name: self.counts.get(name, PathCounts()).as_json() for name in self.paths},
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
            **({"split": {family or "cheap paths only": {"examples": n, "seconds": round(seconds, 3)}
                          for family, (n, seconds) in self.split.items()}} if self.split else {}),
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
        result.split = {("" if family == "cheap paths only" else family): [t["examples"], t["seconds"]]
                        for family, t in data.get("split", {}).items()}
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
            share = f"{c.checked} ({100 * c.checked / c.examples:.0f}%)" if c.examples else "0"
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
            if name.startswith("compiled") and self.with_backward and not self.split:  # it can only check a backward
                lines.append(f"{'':<{w}}   checked {100 * c.checked / self.with_backward:.0f}% of the "
                             f"{self.with_backward} examples where a backward runs")
        lines += self.split_lines()
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


    def split_lines(self) -> list[str]:
        """How the fuzzed examples were shared between the cheap paths and the compiling families."""
        if not self.split:
            return []
        cheap_only, cheap_seconds = self.split.get("", [0, 0.0])
        families = [f"{family} on {n} ({seconds:.1f} s)" for family, (n, seconds) in self.split.items() if family]
        return ["", "budget split (harness/split.py; fuzz --every-path runs every path on every example): the cheap "
                    "paths checked every fuzzed example, and a compiling family a share of them, each family about "
                    "the same part of the time: " + ", ".join(families)
                    + f"; the cheap paths alone on {cheap_only} ({cheap_seconds:.1f} s)"]

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


__all__ = ["CampaignResult", "Failure", "PathCounts", "TwinCounts", "shrink_note", "signature", "smaller"]
