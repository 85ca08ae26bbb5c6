"""A campaign's records: one JSON object per line in `DIR/examples.jsonl`, flushed as written.

The log is the campaign's source of truth. Counts, failure groups, coverage and
throughput are all rebuilt from it (`harness.results.CampaignResult.add_record`), by the
live run, by `fuzz --resume` and by `report`, so they cannot disagree. Shards of one
campaign (worker processes today, machines later) write records of the same kinds, and
merging shards is concatenating their logs.

Record kinds (each has "kind" and "t", a Unix time):
  start    a campaign session began: paths, device, torch, budget_s, lifetimes, resumed
  example  one checked example: spec hash, per-path outcome, timings, features; the spec
           and report when something failed
  crash    a worker died or hung on an example: its cause and spec
  retired  a worker passed its memory limit and retired between examples (not a crash;
           a fresh worker went on): its resident and limit bytes, the examples it checked
  replay   a saved failure replayed first (harness.replay): "still fails", "did not
           reproduce" or "not saved"; its example, when it came from the shared database, is an
           "example" record with "replayed": true
  replayed the replay's own seconds and examples (fuzzing had the rest of the budget)
  shrunk   a cause's reproducer after shrinking: how it ended, sizes before and after
  reproducer  a cause's reproducer written unshrunk (its shrinking ran out of budget)
  end      a session ended normally
  shards   last in a Ray campaign's merged log (the shards' logs one after the other, each record
           tagged "shard"): a row per shard, and the campaign's wall times
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.dataflow import has_backward
from harness.spec import GraphSpec

if TYPE_CHECKING:
    from harness.check import PathOutcome, Verdict
    from harness.oracles.compare import Mismatch

LOG_NAME = "examples.jsonl"
#: the Hypothesis example database of a campaign folder (failing examples, shrunk ones)
DATABASE_NAME = "examples-db"
#: checkpoints and roles lose their particulars ("hook3.grad0" -> "hook.grad"), so causes group
_DIGITS = re.compile(r"\d+")


class ExampleLog:
    """Appends records to a JSONL file, one line per record, flushed at once: a process
    killed at any point loses at most the line it was writing (which `read_log` skips)."""

    def __init__(self, path: str | Path, *, shared: bool = False) -> None:
        """shared: other processes are appending to the log already (the nightly's HypoFuzz
        workers), so its tail is left alone: a line they are writing is not a torn one, and the
        first process to open the log cut any torn line already."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not shared:
            _drop_torn_line(self.path)
        # unbuffered, so that each record is one write(2) to a file opened for appending: several
        # processes may append to one log (the nightly's HypoFuzz workers) without mixing lines
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 (open for the log's life)

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        written = self._file.write(line)
        while written < len(line):  # a short write (a signal, a full disk): the rest follows
            written += self._file.write(line[written:])

    def close(self) -> None:
        self._file.close()


def _drop_torn_line(path: Path) -> None:
    """Cut a last line a kill left half-written, so the next record starts on a line of its own."""
    if not path.exists():
        return
    with open(path, "rb+") as f:
        size = f.seek(0, 2)
        tail_start = max(0, size - 1_000_000)  # far longer than any one record
        f.seek(tail_start)
        tail = f.read()
        if tail and not tail.endswith(b"\n"):
            f.truncate(tail_start + tail.rfind(b"\n") + 1)


def read_log(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a log, in order; a torn last line (a kill mid-write) is skipped."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                return  # the write a kill interrupted: never acknowledged, so nothing is lost
            yield json.loads(line)


def log_path(folder: str | Path) -> Path:
    return Path(folder) / LOG_NAME


def now() -> float:
    return round(time.time(), 3)


# --- what is recorded about an example ---------------------------------------------------


def spec_hash(spec: GraphSpec) -> str:
    return hashlib.sha1(spec.to_json().encode()).hexdigest()[:16]


def spec_size(spec: GraphSpec) -> int:
    """How big a reproducer is to read: its leaves, Functions, arguments, outputs, terms and
    hooks (each counts one)."""
    parts = len(spec.leaves) + len(spec.functions) + len(spec.hooks)
    for fn in spec.functions:
        parts += len(fn.args) + len(fn.outputs) + sum(len(o.terms) for o in fn.outputs)
    return parts


def features(spec: GraphSpec) -> dict[str, Any]:
    """The example's place on every axis of the generated space: for each axis the values
    it has somewhere in the graph (sorted), and `inputs`, the tensor input count of each
    Function (the histogram around the borrowed vector's inline capacity comes from it)."""
    fns = spec.functions
    axes: dict[str, set[Any]] = {
        "functions": {len(fns)}, "leaves": {len(spec.leaves)}, "ndim": {len(spec.shape)},
        "empty": {0 in spec.shape}, "dtype": {spec.dtype}, "backward": {spec.backward},
        "forward_ad": {spec.forward_ad}, "trace": {spec.trace},
        "hook": {h.kind for h in spec.hooks}, "layout": {leaf.layout for leaf in spec.leaves},
        "views": {bool(leaf.views) for leaf in spec.leaves},
        "style": {f.style for f in fns}, "code": {f.code for f in fns},
        "output": {o.kind for f in fns for o in f.outputs},
        "op": {t.op for f in fns for o in f.outputs for t in o.terms},
        "save": {s for f in fns for s in f.save} | ({"nothing"} if any(not f.save for f in fns) else set()),
        "non_tensor_arg": {any(a.ref is None for a in f.args) for f in fns},
        "non_differentiable": {any(o.non_differentiable for o in f.outputs) for f in fns},
        "listed_output": {any(o.listed for o in f.outputs) for f in fns},
        "listed_argument": {bool(f.listed_slots) for f in fns},
        "needs_input_grad": {f.needs_input_grad for f in fns}, "unused_grad": {f.unused_grad for f in fns},
        "materialize_grads": {f.materialize_grads for f in fns},
        "once_differentiable": {f.once_differentiable for f in fns}, "jvp": {f.jvp for f in fns},
        "vmap": {f.vmap for f in fns}, "ctx_state": {f.ctx_state for f in fns},
        "tuple_output": {f.tuple_output for f in fns}, "error": {f.error or "none" for f in fns},
        "mask": {leaf.dtype for leaf in spec.leaves if leaf.dtype} & {
            spec.leaves[int(f.args[s].ref[1:])].dtype for f in fns for s in f.mask_slots} or {"none"},
        "backward_method": {f.backward_method for f in fns}, "untraceable": {f.untraceable for f in fns},
        "nested": {f.nested for f in fns}, "dirty_view": {any(a.view for a in f.args) for f in fns},
        "partial_backward": {bool(spec.grad_leaves)}, "mutated_outputs": {bool(spec.mutated_outputs)},
        "batch_shared": {bool(spec.batch_shared)}, "compiled_backward": {spec.compiled_backward},
        "batch_dim": {spec.batch_dim},
        "checkpoint": {spec.checkpoint}, "forward_code": {spec.forward_code},
        "dirty_return": {o.kind == "dirty" and f.dirty_return for f in fns for o in f.outputs} - {False},
        "clear_saved_tensors_on_access": {f.clear_saved_tensors_on_access for f in fns},
        "grad_mode": {f.grad_mode for f in fns},
        "keyword_args": {bool(f.keyword_args) for f in fns}, "keyword_default": {f.keyword_default for f in fns},
    }
    found: dict[str, Any] = {axis: sorted(values, key=str) for axis, values in axes.items()}
    found["inputs"] = [len(f.tensor_slots) for f in fns]
    return found


# --- causes: what groups failures into one bug ----------------------------------------------

#: a cause this harness writes: its words, then its family and fingerprint (`Cause`)
_KEYED = re.compile(r"^(?P<words>.+) on (?P<family>[\w+]+) \[(?P<fingerprint>[^\]]*)\]$")


@dataclass(frozen=True)
class Cause:
    """One bug, as failures are grouped, saved, shrunk, replayed and diffed by it. Its text is
    the key (records, the example database, reproducer names):
    "mismatch vs math at backward grad on compiled [values]".

    words: the symptom, what it was against, the checkpoint and the kind of role (no indices),
    an error's exception type. family: where the bug lives, the path family that shows it
    (`cause_family`). fingerprint: what the difference itself looks like (`fingerprint`). A
    cause an older harness wrote is its words alone (family and fingerprint "")."""

    words: str
    family: str = ""
    fingerprint: str = ""

    def __str__(self) -> str:
        return f"{self.words} on {self.family} [{self.fingerprint}]" if self.family else self.words

    @classmethod
    def parse(cls, text: str) -> Cause:
        keyed = _KEYED.match(text)
        return cls(keyed["words"], keyed["family"], keyed["fingerprint"]) if keyed else cls(text)


def cause_family(path: str) -> str:
    """The family a cause seen on `path` alone belongs to: eager, compiled, dynamo, func or
    func+dynamo (known_issues.entry.path_family: every mode, transform and device of one
    mechanism is one family), and owned or borrowed (`causes_of` makes a cause both show
    `native`, their one C++ template)."""
    from harness.known_issues.entry import path_family

    return path_family(path)


def causes_of(outcomes: Iterable[PathOutcome]) -> dict[str, str]:
    """The cause of each failed outcome of one example's check (by path name).

    A difference is the bug of the code every path that shows it shares: one that eager shows
    too (the same difference from the same reference at the same role, where the path agrees
    with eager) is eager's, the Function's or the stock autograd's, and the path's cause is
    eager's; one that owned and borrowed both show is `native`'s. A path's cause is its first
    difference that is not eager's, else eager's cause. So one bug on several paths is one
    cause, and a bug of one path's own code is a cause of that path's family, apart from any
    other path's with the same words."""
    by_path = {o.path: o for o in outcomes}
    eager = by_path.get("eager")
    eager_cause = _cause(eager.mismatches[0], "eager") if eager is not None and eager.status == "failed" else None
    causes: dict[str, str] = {}
    for name, o in by_path.items():
        if o.status != "failed":
            continue
        if eager_cause is not None and name != "eager":
            own = [m for m in o.mismatches if not _shared(m, o, eager, "eager")]
            if not own:
                causes[name] = eager_cause
                continue
        else:
            own = o.mismatches
        causes[name] = _cause(own[0], _family_of(own[0], o, by_path))
    return causes


def cause_of(outcome: PathOutcome) -> str:
    """The cause of one failed outcome checked alone (`causes_of` of it)."""
    return causes_of([outcome])[outcome.path]


#: the native paths: one C++ template over two input holders
_NATIVE = ("owned", "borrowed")


def _family_of(m: Mismatch, outcome: PathOutcome, by_path: dict[str, PathOutcome]) -> str:
    owned, borrowed = by_path.get("owned"), by_path.get("borrowed")
    if outcome.path in _NATIVE and owned is not None and borrowed is not None:
        other = borrowed if outcome is owned else owned
        # borrowed is compared with owned too: where it differs from owned, the difference is its own
        if _shows(other, m) and not _differs(borrowed, "owned", m):
            return "native"
    return cause_family(outcome.path)


def _shared(m: Mismatch, outcome: PathOutcome, reference: PathOutcome | None, reference_name: str) -> bool:
    """Whether `reference` shows the difference `m` of `outcome` too, and `outcome` does not
    differ from `reference` there (reference_name: what the comparison with it is called)."""
    return _shows(reference, m) and not _differs(outcome, reference_name, m)


def _shows(outcome: PathOutcome | None, m: Mismatch) -> bool:
    """The failed `outcome` has the difference `m`: from the same reference at the same role."""
    return outcome is not None and outcome.status == "failed" and any(
        (x.against, x.checkpoint, x.role) == (m.against, m.checkpoint, m.role) for x in outcome.mismatches)


def _differs(outcome: PathOutcome, reference_name: str, m: Mismatch) -> bool:
    """`outcome` differs from `reference_name` at m's checkpoint and role."""
    return any((x.against, x.checkpoint, x.role) == (reference_name, m.checkpoint, m.role) for x in outcome.mismatches)


def _cause(m: Mismatch, family: str) -> str:
    return str(Cause(_words(m), family, fingerprint(m)))


def _words(m: Mismatch) -> str:
    """The symptom, what it was against, the checkpoint and role (without indices) and, for an
    error, the exception type."""
    checkpoint = _DIGITS.sub("", m.checkpoint)
    role = _DIGITS.sub("", m.role.split(":")[0])
    if m.against == "lifetime rule" or checkpoint.startswith(("life", "probe")):
        symptom = "lifetime"
    elif checkpoint.startswith("meta"):
        symptom = "metadata"
    elif role == "error":
        symptom = "error"
    else:
        symptom = "mismatch"
    # a twin (harness/oracles/twins.py) is named by its pair: shrinking forces that pair's twin
    against = (m.against if m.against in ("math", "eager", "lifetime rule") or m.against.startswith("twin ")
               else "the other path")
    exception = ""
    if symptom == "error":  # "raised TypeError: ..." or "x raised TypeError: ...; eager ran ..."
        raised = re.search(r"raised (\w+)", m.detail)
        exception = f" ({raised.group(1)})" if raised else ""
    return f"{symptom} vs {against} at {checkpoint} {role}{exception}"


def fingerprint(m: Mismatch) -> str:
    """What the difference itself looks like: its kind (DIFFERENCE_KINDS: a wrong value, a
    missing gradient, a wrong shape, a leak, a cycle, ...).

    It is read off the difference, not off the example, because a cause's key is fixed by the
    first example that shows it and shrinking keeps to it: a difference's kind is what a bug
    does, so every example of one bug and its shrunk form share it. The options of the
    Function at the difference (its style, what it saves, its output kinds) are what the
    example happens to be: keyed by them, one bug that any Function meets split into a cause
    per combination (measured: docs/causes.md), each shrunk apart, and shrinking could not
    drop an option the bug does not need. Its limit: two bugs of one path family with the same
    words and the same kind of difference (two wrong gradients of compiled autograd, on two
    kinds of Function) are one cause; the paths and the reproducer say which examples showed it."""
    if m.role == "error":  # who raised: this path where its reference did not, or the reference alone
        alone = m.detail.startswith("ran without") or m.detail.endswith(f"{m.path} ran without error")
        return "missing error" if alone else "raised"
    for words, kind in DIFFERENCE_KINDS:
        if words in m.detail:
            return kind
    return "other"


#: the kinds of difference the comparisons (harness.oracles.compare, the lifetime rules) report,
#: by words of their detail: the first that matches names it
DIFFERENCE_KINDS = (
    ("present on one side only", "absent"), ("expected None", "extra tensor"), ("got None", "missing tensor"),
    ("shape (", "shape"), ("dtype torch.", "dtype"), ("not bit-identical", "values"), ("outside tolerance", "values"),
    ("not finite", "non-finite"), ("non-finite value differs", "non-finite"),
    ("(leak)", "leak"), ("reference cycle", "cycle"), ("released before backward", "released early"),
    ("released despite retain_graph", "released early"), ("still alive after", "kept alive"),
    ("use count", "use count"), ("expected ", "value"),
)


def same_cause(saved: str, cause: str, paths: Iterable[str] = ()) -> bool:
    """Whether `cause` (as this harness words it) is the saved cause `saved`: the same text, or,
    for one an older harness saved (its words alone), the same words on the family of one of
    `paths`, those it was seen on (any family when none are given)."""
    if saved == cause:
        return True
    old, new = Cause.parse(saved), Cause.parse(cause)
    families = {cause_family(p) for p in paths}
    if new.family == "native":
        families |= {"native"} if families & set(_NATIVE) else set()
    return not old.family and old.words == new.words and (not families or new.family in families)


def outcome_record(outcome: PathOutcome, cause: str | None = None) -> dict[str, Any]:
    """cause: the outcome's (`causes_of` its example's outcomes), else `cause_of` it alone."""
    record: dict[str, Any] = {"status": outcome.status}
    if outcome.reason:
        record["reason"] = outcome.reason
    if outcome.known:
        record["known"] = list(outcome.known)
    if outcome.eager_known:  # eager's own issues, and what they left judged by the math oracle alone
        record["eager_known"] = dict(outcome.eager_known)
    if outcome.status == "failed":
        record["cause"] = cause or cause_of(outcome)
    # elements that differ and were not judged, per "checkpoint role" (harness.oracles.compare.Uncompared)
    if +outcome.uncompared.unchecked:
        record["unchecked"] = dict(outcome.uncompared.unchecked)
    if +outcome.uncompared.overflowed:
        record["overflowed"] = dict(outcome.uncompared.overflowed)
    if outcome.result is not None and outcome.result.trace:  # how Dynamo ran it (harness.paths.tracing)
        record["trace"] = outcome.result.trace["example"]
    return record


# --- building records ------------------------------------------------------------------


#: a record, and where a campaign sends each one (its result, the log, the progress display)
Record = dict[str, Any]
OnRecord = Callable[[Record], None]
#: the cause of a failed gradcheck starts with it
GRADCHECK_CAUSE = "gradcheck"
#: a saved cause's replay or shrinking where the harness itself failed: its state is unknown
HARNESS_ERROR = "harness error"


class HarnessError(Exception):
    """The harness itself failed (an oracle, the decoder, a comparison) while replaying, shrinking or
    checking: never a finding about torch, and never "did not reproduce"."""


def harness_error_record(during: str, error: BaseException, cause: str | None = None,
                         spec: GraphSpec | None = None) -> Record:
    """A "harness_error" record: what the harness was doing (and on which cause or example), and its
    error with the end of its traceback. The campaign exits 2 (session.campaign_status)."""
    cause_error = error.__cause__ if isinstance(error, HarnessError) and error.__cause__ is not None else error
    shown = "".join(traceback.format_exception(cause_error)[-6:]).rstrip()
    record: Record = {"kind": "harness_error", "t": now(), "during": during, "cause": cause, "error": shown}
    if spec is not None:
        record["spec"] = spec.to_json()
    return record


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


def record_causes(record: Record) -> set[str]:
    """The failure causes an example record shows: its paths' and gradcheck's."""
    causes = {o["cause"] for o in record["outcomes"].values() if o["status"] == "failed"}
    if record["gradcheck"] == "failed":
        causes.add(record["gradcheck_cause"])
    return causes


def _numbers_out(text: str) -> str:
    return re.sub(r"[-+]?\d[\d.e+-]*", "N", text)[:160]


__all__ = [
    "GRADCHECK_CAUSE",
    "HARNESS_ERROR",
    "DATABASE_NAME",
    "HarnessError",
    "OnRecord",
    "Record",
    "crash_cause",
    "example_record",
    "gradcheck_cause",
    "harness_error_record",
    "record_causes",
    "LOG_NAME",
    "ExampleLog",
    "Cause",
    "cause_family",
    "cause_of",
    "causes_of",
    "DIFFERENCE_KINDS",
    "fingerprint",
    "features",
    "log_path",
    "now",
    "outcome_record",
    "read_log",
    "same_cause",
    "spec_hash",
    "spec_size",
]
