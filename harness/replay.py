"""Saved failures first, replayed outside Hypothesis' engine.

A campaign begins by checking again the failures saved before it: its own earlier ones on
`--resume`, and every failure that the campaigns sharing its example database (a folder, Redis,
a GitHub artifact) saved for the others to replay first (CauseDatabase.FAILURES_FIRST).
Hypothesis' engine would replay them in its reuse phase, but it then insists that a replayed
failure fail again, the same way, when it replays it last: a saved failure that no longer failed
(a fixed torch, another path set, a flaky cause, a cause the campaign knew already) made it raise
Flaky ("Failed on the first call but did not on a subsequent one") and killed the campaign's
worker. Here each saved choice sequence is decoded into its spec by the campaign's own strategy
(`graph_strategy`, as the fuzz test draws it) and checked once. Whatever happens is a record,
never an exception:

  example        a replayed example of the shared database, counted as every checked example is
  replay         one per saved cause: "still fails", "did not reproduce", "not saved" (nothing under
                 it) or "harness error"
  harness_error  the harness itself failed replaying a cause (the decoder, an oracle, a comparison:
                 anything the check raises, since torch's errors are results): that cause's state is
                 unknown, never "did not reproduce", and the campaign exits 2
  replayed       the replay's own seconds and examples, reported apart from fuzzing, which has the
                 rest of the budget

Every entry point runs this: run_campaign (`--workers 0`), the first worker of run_parallel,
and so every Ray shard's campaign (only shard 0 replays the shared database, so its examples are
counted once).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable

from hypothesis.control import BuildContext
from hypothesis.database import ExampleDatabase, choices_from_bytes
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis.internal.conjecture.data import ConjectureData

from harness.dataflow import has_backward
from harness.engine import CauseDatabase, Drawing, check_example, drawing, graph_strategy, graph_test_key, needs_backward
from harness.paths import Path as ExecPath
from harness.records import HARNESS_ERROR, OnRecord, harness_error_record, now, record_causes, same_cause
from harness.results import Failure
from harness.shrink import checked_paths, shows
from harness.spec import GraphSpec

STILL_FAILS = "still fails"
DID_NOT_REPRODUCE = "did not reproduce"
NOT_SAVED = "not saved"
#: the cause reported for an example saved without its causes (by a harness before they were kept)
UNKNOWN_CAUSE = "a saved failure whose cause was not kept (saved by an older harness)"


def decode(choices: bytes, device: str, drawn: Drawing) -> GraphSpec | None:
    """The spec a saved choice sequence draws from the campaign's strategy, or None when it no
    longer decodes (the generator changed since it was saved)."""
    parsed = choices_from_bytes(choices)
    if parsed is None:
        return None
    return draw_graph(ConjectureData.for_choices(parsed), device, drawn)


def draw_graph(data: ConjectureData, device: str, drawn: Drawing) -> GraphSpec | None:
    """The spec the campaign's strategy draws from `data` (a saved sequence, or a changed one
    that goes on at random: harness.seeds), or None when it does not draw one (the sequence runs
    out, or the strategy rejects what it draws). Any other exception is the strategy's own error,
    and propagates."""
    try:
        with BuildContext(data, is_final=True, wrapped_test=decode):
            return data.draw(graph_strategy(device, drawn))
    except (StopTest, UnsatisfiedAssumption):
        return None


def shared_failures(database: ExampleDatabase) -> list[tuple[bytes, list[str]]]:
    """Every failing example saved for campaigns to replay first, smallest first, each with the
    causes it was saved under (none for one saved before they were kept)."""
    values = sorted(set(database.fetch(CauseDatabase.FAILURES_FIRST + graph_test_key())), key=lambda v: (len(v), v))
    return [(v, sorted({c.decode() for c in database.fetch(CauseDatabase.causes_key(v))})) for v in values]


def replay_cause(failure: Failure, paths: list[ExecPath], device: str, database: ExampleDatabase, lifetimes: bool,
                 *, until: float, drawn: Drawing | None = None) -> str:
    """Does a cause the campaign holds still fail? Its examples saved under its key (shrunk ones
    first, a crash's choice sequence too) are checked until one shows it: STILL_FAILS,
    DID_NOT_REPRODUCE or NOT_SAVED. `paths`: those it failed on. drawn: the campaign's
    graphs() options (its whole path list's `drawing`), else those of `paths`. The harness's own
    errors (decoding, checking) propagate: they are never DID_NOT_REPRODUCE."""
    key, under = graph_test_key(), CauseDatabase(database, [failure.signature])
    saved = [base64.b64decode(failure.choices)] if failure.choices else []
    saved += sorted(under.fetch(key), key=len) + sorted(under.fetch(key + b".secondary"), key=len)
    if not saved:
        return NOT_SAVED
    drawn = drawing(paths) if drawn is None else drawn
    for value in saved:
        if time.perf_counter() >= until:
            break
        spec = decode(value, device, drawn)
        if spec is not None and shows(failure, spec, paths, device, lifetimes, until=until):
            return STILL_FAILS
    return DID_NOT_REPRODUCE


def replay_first(earlier: list[Failure], paths: list[ExecPath], device: str, database: ExampleDatabase,
                 lifetimes: bool, *, until: float, on_record: OnRecord, known: set[str], shared: bool = True,
                 worker: str = "", on_example: Callable[[GraphSpec, str], None] | None = None,
                 twins: bool = False) -> None:
    """Before fuzzing: the campaign's own earlier failures (`earlier`, on --resume), then, with
    `shared`, every failure saved in `database` for campaigns to replay first whose causes the
    campaign does not hold already. The causes a replayed example shows are added to `known` and
    the example saved under them (shrinking starts from it). on_example sees each spec and its
    choice sequence (base64, as records carry it) before its check: a worker's "begin", so that a
    crash on it is recorded, and shrunk, as that example's."""
    started = time.perf_counter()
    drawn = drawing(paths)
    for failure in earlier:
        if failure.shrinkable and time.perf_counter() < until:
            try:
                result = replay_cause(failure, checked_paths(failure, paths), device, database, lifetimes,
                                      until=until, drawn=drawn)
            except Exception as e:  # noqa: BLE001 -- the harness's own error: recorded, the state of the cause unknown
                on_record(harness_error_record("replaying", e, cause=failure.signature))
                result = HARNESS_ERROR
            on_record({"kind": "replay", "t": now(), "cause": failure.signature, "result": result})
    examples, left = 0, 0
    settled = set(known) | {f.signature for f in earlier}  # nothing more to learn about these
    results: dict[str, str] = {}
    for value, causes in shared_failures(database) if shared else []:
        open_causes = [c for c in causes if c not in settled]
        if causes and not open_causes:
            continue  # replayed above, known to this campaign, or shown to fail still
        if time.perf_counter() >= until:
            left += 1
            continue
        try:
            found = check_outside_the_engine(decode(value, device, drawn), value, paths, device, lifetimes,
                                             database=database, known=known, on_record=on_record,
                                             marks={"replayed": True}, worker=worker, on_example=on_example,
                                             twins=twins)
        except Exception as e:  # noqa: BLE001 -- the harness's own error: recorded, the state of its causes unknown
            on_record(harness_error_record("replaying", e, cause=", ".join(open_causes) or None))
            found, broken = None, True
        else:
            broken = False
        examples += found is not None
        for cause in open_causes or sorted(found or ()) or [UNKNOWN_CAUSE]:
            # a cause saved by an older harness (its words alone) still fails where its words do
            result = (HARNESS_ERROR if broken else STILL_FAILS if found and any(same_cause(cause, c) for c in found)
                      else DID_NOT_REPRODUCE)
            if results.get(cause) != result:  # another saved example of a cause may show it still
                results[cause] = result
                on_record({"kind": "replay", "t": now(), "cause": cause, "result": result})
            if result == STILL_FAILS:
                settled.add(cause)
    if earlier or results or left:
        on_record({"kind": "replayed", "t": now(), "seconds": round(time.perf_counter() - started, 3),
                   "examples": examples, "left": left})


def check_outside_the_engine(spec: GraphSpec | None, value: bytes, paths: list[ExecPath], device: str,
                             lifetimes: bool, *, database: ExampleDatabase, known: set[str], on_record: OnRecord,
                             marks: dict, worker: str = "",
                             on_example: Callable[[GraphSpec, str], None] | None = None,
                             twins: bool = False) -> set[str] | None:
    """Check one example that Hypothesis' engine did not draw (a saved failure replayed, a known
    bug's seed or its mutant: harness.seeds), `value` its choice sequence: the causes it shows (its
    example record, with `marks` added, sent), or None when there is no spec or it is not an example
    of this campaign. What its check raises is the harness's own error and propagates. A cause not
    in `known` is added to it and the example saved under it, as the fuzz test saves a new cause's
    example (shrinking starts from it)."""
    if spec is None or (needs_backward(paths) and not has_backward(spec)):
        return None
    if on_example is not None:
        on_example(spec, base64.b64encode(value).decode())
    record = check_example(spec, paths, device, lifetimes, generate_ms=0.0, worker=worker, twins=twins)
    record.update(marks)
    on_record(record)
    found = record_causes(record)
    new = found - known
    if new:
        known |= new
        CauseDatabase(database, sorted(new), unshrunk=True, failures_first=True).save(graph_test_key(), value)
    return found
