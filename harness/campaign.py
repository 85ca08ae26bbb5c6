"""The fuzz loop: draw graphs, check every path, record each example; then shrink each
distinct cause (harness.shrink) and write its reproducer, all within the campaign's budget.

A campaign first replays the failures saved before it (harness.replay), then checks the seeds
of known bugs (harness.seeds), then fuzzes (`fuzz`), then shrinks. Everything it learns is a
record (harness/records.py), and its counts are rebuilt from records only
(harness.results.CampaignResult.add_record), live or from the log.

The budget covers everything: once there are causes to shrink, fuzzing stops where the
budget's last shrink_reserve begins (a quarter of it, or a minute a cause up to half of it),
and shrinking and the reproducers share the rest, each cause getting an equal part of what is
left when its turn comes (a cause out of time keeps the smallest failing example seen so far);
with nothing to shrink, fuzzing goes on to the end.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path

import torch
from hypothesis import Phase, reject
from hypothesis.database import ExampleDatabase, InMemoryExampleDatabase

from harness.check import check, gradcheck_verdict
from harness.dataflow import has_backward
from harness.engine import CauseDatabase, Found, HarnessFailed, check_example, drawing, graph_test, needs_backward
from harness.paths import Path as ExecPath
from harness.records import OnRecord, Record, harness_error_record, now, record_causes, spec_hash
from harness.replay import replay_first
from harness.results import CampaignResult
from harness.seeds import check_seeds, seeds_until
from harness.shrink import SHRINK_SHARE, shrink_failures, shrink_reserve, to_shrink, write_unshrunk_reproducers
from harness.spec import GraphSpec
from harness.split import BudgetSplit

BATCH = 25


class _Stop(Exception):
    """Raised in the fuzz test when its time or example count is spent, to end the batch."""


def fuzz(paths: list[ExecPath], *, until: float, device: str, database: ExampleDatabase, lifetimes: bool,
         on_record: OnRecord, known: set[str], max_examples: int | None = None,
         on_example: Callable[[GraphSpec], None] | None = None, worker: str = "",
         until_failure: bool = False, should_stop: Callable[[], bool] | None = None, twins: bool = False,
         every_path: bool = False) -> None:
    """Check generated examples until `until` (time.perf_counter()), max_examples, should_stop()
    or, with until_failure, the first example that fails; each is one record. An example with
    a cause not in `known` is saved in `database` under that cause (and the cause becomes known).
    The failures saved in `database` before are not replayed here: harness.replay does that first.
    Each example runs the cheap paths and, on a share of them, a compiling family (harness.split);
    with every_path, every path."""
    checked = [0]
    checked_specs: set[str] = set()  # their spec hashes
    failed = [False]
    pending: list[GraphSpec] = []  # the example the test raised on, which Hypothesis replays once
    last_end = [time.perf_counter()]
    db = CauseDatabase(database, unshrunk=True, failures_first=True)
    only_backward = needs_backward(paths)
    split = BudgetSplit(paths, every_path)
    # A full gc.collect() costs ~80 ms with torch imported; once everything imported so far
    # is frozen out of the collector, the lifetime oracle's collections cost ~0.01 ms.
    gc.collect()
    gc.freeze()

    def more() -> bool:
        return (time.perf_counter() < until and (max_examples is None or checked[0] < max_examples)
                and not (until_failure and failed[0]) and not (should_stop is not None and should_stop()))

    def one_example(spec: GraphSpec) -> None:
        if pending and spec == pending[0]:
            raise Found  # Hypothesis' final replay of the example we raised on
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
        example_paths, family = split.paths_for(spec)
        started = time.perf_counter()
        try:
            record = check_example(spec, example_paths, device, lifetimes,
                                   generate_ms=1000 * (started - last_end[0]), worker=worker, key=key, twins=twins)
        except Exception as e:  # noqa: BLE001 -- the harness's own error (torch's are results): recorded, never shrunk as a finding
            on_record(harness_error_record("checking an example", e, spec=spec))
            raise HarnessFailed(e) from e
        checked[0] += 1
        split.charge(family, time.perf_counter() - started)
        if split.splits:
            record["family"] = family or ""
        on_record(record)
        last_end[0] = time.perf_counter()
        causes = record_causes(record)
        failed[0] = bool(causes)
        new = causes - known
        if new:
            known.update(new)
            db.causes, pending[:] = sorted(new), [spec]
            raise Found

    # the failures saved before (a shared database's) are replayed before fuzz by harness.replay, outside
    # this engine: Hypothesis' own reuse phase raises Flaky on a saved example that no longer fails
    batch = graph_test(one_example, device, drawing(paths), max_examples=BATCH, database=db,
                        phases=[Phase.explicit, Phase.generate])
    while more():
        db.causes = []  # an example is saved only under the new causes it raised for
        try:
            batch()
        except Found:
            pending.clear()
        except _Stop:
            return
        except HarnessFailed:  # recorded; the next batch goes on
            pass
        last_end[0] = time.perf_counter()


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


def run_campaign(paths: list[ExecPath], *, budget_s: float, device: str = "cpu",
                 out_dir: str | Path = "failures", database: ExampleDatabase | None = None,
                 max_examples: int | None = None, lifetimes: bool = True,
                 result: CampaignResult | None = None, on_record: OnRecord | None = None,
                 on_example: Callable[[GraphSpec], None] | None = None,
                 on_progress: Callable[[CampaignResult], None] | None = None,
                 name_prefix: str = "", until_failure: bool = False, replay_shared: bool = True,
                 uncharged_s: float = 0.0, seeds: bool = False,
                 twins: bool = False, every_path: bool = False) -> CampaignResult:
    """A campaign in this process: replay the failures `result` already holds (a resumed
    campaign) and, with replay_shared, those saved in `database` by earlier campaigns
    (harness.replay), with `seeds` start from the known bugs' seeds (harness.seeds; not on a resumed
    campaign, nor without replay_shared: a Ray shard but the first), fuzz, then shrink each new
    cause, all within `budget_s`. Each record goes to
    `result` and then to on_record (the log, the progress display); on_example sees each spec
    before it is checked and on_progress the result after each example. uncharged_s: one-time
    costs the caller kept out of the budget (the native build, a warm-up), for the summary.
    twins: check each example's twin in another Function form too (harness/oracles/twins.py;
    `fuzz` turns it on unless --no-twins). every_path: every fuzzed example runs every path (else the
    compiling ones run on a share of them, harness.split)."""
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
            "resumed": bool(result.examples), "uncharged_s": uncharged_s, "every_path": every_path})
    known = set(result.failures)
    replay_first(list(result.failures.values()), paths, device, database, lifetimes, until=end, on_record=record,
                 known=known, shared=replay_shared, twins=twins,
                 on_example=None if on_example is None else lambda spec, choices: on_example(spec))
    if seeds and replay_shared and not result.examples:
        check_seeds(paths, device, database, lifetimes, until=seeds_until(end), on_record=record, known=known,
                    on_example=None if on_example is None else lambda spec, choices: on_example(spec), twins=twins)
    def fuzzing_ends() -> bool:  # once there is a cause to shrink and its time has come
        causes = len(to_shrink(result))
        return bool(causes) and time.perf_counter() >= end - shrink_reserve(budget_s, causes)

    fuzz(paths, until=end, device=device, database=database, lifetimes=lifetimes, on_record=record,
         known=known, max_examples=max_examples, on_example=on_example,
         until_failure=until_failure, twins=twins, every_path=every_path,
         should_stop=fuzzing_ends)
    shrink_failures(list(result.failures.values()), paths, device, database, lifetimes, until=end,
                    out_dir=out_dir, on_record=record, name_prefix=name_prefix)
    write_unshrunk_reproducers(result, out_dir, record)
    record({"kind": "end", "t": now()})
    return result.finish()


__all__ = ["BATCH", "SHRINK_SHARE", "fuzz", "run_campaign", "warm_up"]
