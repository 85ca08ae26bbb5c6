"""Shrinking each failure cause with Hypothesis' own shrinker, and writing its reproducer.

Shrinking starts from the example that failed, not from scratch. When an example shows a
cause not seen before (a path's mismatch, or gradcheck's failure), the fuzz test raises, so
Hypothesis saves that example's choice sequence in the example database under the cause's own
key (harness.engine.CauseDatabase). A worker that dies on an example (a crash or hang) cannot
save it: it sends the example's choice sequence before checking it, and shrinking saves that
under the cause's key. One test per cause then runs with `phases=[Phase.reuse, Phase.shrink]`
over that key: Hypothesis replays the saved example and shrinks it, keeping its best in the
database as it goes; a crash's candidates each run in a forked child (`shows`).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import signal
import time
import traceback
import unittest
from pathlib import Path

import torch
from hypothesis import Phase
from hypothesis.database import ExampleDatabase
from hypothesis.errors import Flaky

from harness.check import Verdict, check, gradcheck_verdict
from harness.engine import CauseDatabase, Drawing, Found, HarnessFailed, drawing, graph_test, graph_test_key
from harness.paths import Path as ExecPath
from harness.records import (GRADCHECK_CAUSE, HARNESS_ERROR, Cause, HarnessError, OnRecord, cause_family, causes_of,
                             crash_cause, gradcheck_cause, harness_error_record, now, same_cause, spec_size)
from harness.repro import write_crash_reproducer, write_gradcheck_reproducer, write_reproducer
from harness.results import CampaignResult, Failure, smaller
from harness.spec import GraphSpec


#: of each cause's part of the shrinking time, what Hypothesis' shrinking may use; the rest writes the
#: reproducer, runs it once and reduces its source (harness.reduce), which also gets whatever
#: Hypothesis leaves when it completes early. Most goes to Hypothesis: it deletes whole Functions,
#: arguments and leaves from the spec in a few candidates each, where pysource-minimize needs
#: repeated passes for one Function (each of its edits alone breaks the script); on a dynamo
#: reproducer its first hundred or so candidates (tens of seconds) delete nothing (docs/reduce.md)
SHRINK_PART = 0.8


#: the share of a campaign's budget kept for shrinking failures and writing reproducers (Hypothesis'
#: shrinking, then the script run once and reduced at the source level: what a maintainer reads)
SHRINK_SHARE = 0.25
#: what each cause to shrink is given at least, while that is at most MAX_SHRINK_SHARE of the budget:
#: a short campaign that found a cause spends its time making that cause readable, where a quarter of
#: 150 s (a few dozen candidates of a compiling path) leaves a reproducer of hundreds of lines
SHRINK_PER_CAUSE_S = 60.0
MAX_SHRINK_SHARE = 0.5


def shrink_reserve(budget_s: float, causes: int) -> float:
    """The seconds at the end of a budget of `budget_s` kept for shrinking `causes` causes (fuzzing
    stops that long before the end once there is a cause to shrink)."""
    return max(SHRINK_SHARE * budget_s, min(causes * SHRINK_PER_CAUSE_S, MAX_SHRINK_SHARE * budget_s))


class _TimeUp(KeyboardInterrupt):
    """A cause's shrinking time is spent. Hypothesis lets KeyboardInterrupt through at once,
    without saving the example it was on (any other exception would be shrunk as a bug of its
    own); its best so far is already in the database and in our hands."""


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
            raise HarnessFailed(e) from e
        if found:
            if smaller(spec, best[0]):
                best[0] = spec
            raise Found

    test = graph_test(same_cause, device, drawing(paths) if drawn is None else drawn, database=_saved(failure, database),
                       phases=[Phase.reuse, Phase.shrink], report_multiple_bugs=False)
    try:
        test()
    except Found:
        return best[0], "complete"
    except _TimeUp:
        _unshrunk_again(failure, database)
        return best[0], "time cap"
    except HarnessFailed as e:
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


def _unshrunk_again(failure: Failure, database: ExampleDatabase) -> None:
    """Move the best example of a shrinking cut short to the cause's secondary corpus. Hypothesis
    keeps it in the primary one, and takes what it finds there as shrunk already: the next shrinking
    of the cause (a resumed campaign) would replay it and stop, instead of going on from it."""
    db = CauseDatabase(database, [failure.signature])
    key = graph_test_key()
    for value in list(db.fetch(key)):
        db.move(key, key + b".secondary", value)


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


#: the families whose causes `causes_of` tells apart by owned's and borrowed's outcomes together
_NATIVE_FAMILIES = ("native", "owned", "borrowed")


def shrinking_paths(failure: Failure, paths: list[ExecPath]) -> list[ExecPath]:
    """The paths each shrinking candidate is checked on: of `checked_paths`, those that decide whether
    the cause shows. `causes_of` words a path's cause from that path's outcome and eager's (and for
    the native apply, owned's and borrowed's together), so a cause of one family shows on a candidate
    exactly when it shows on that family's paths and eager, whatever the other paths do. A cause
    eager shows (the Function's, or stock autograd's, seen on every path) is so shrunk on eager
    alone, not through a compile per candidate. A cause without a family (a crash, a hang, an older
    harness's words) keeps every path it was seen on."""
    checked = checked_paths(failure, paths)
    family = Cause.parse(failure.signature).family
    if not family or failure.in_child:
        return checked

    def in_family(path: ExecPath) -> bool:
        own = cause_family(path.name)
        return own == family or (family in _NATIVE_FAMILIES and own in _NATIVE_FAMILIES)

    narrowed = [p for p in checked if p.name == "eager" or in_family(p)]
    # (a family none of them is in, as a cause saved by another harness version may name, keeps them all)
    return narrowed if any(in_family(p) for p in narrowed) else checked


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
    spec, how = shrink(failure, shrinking_paths(failure, paths), device, database, lifetimes, until=until,
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
    """The causes still to shrink: fuzzing leaves them the last shrink_reserve of the budget
    (and, when there are none, fuzzes on to the end)."""
    return [f for f in result.failures.values() if f.shrinkable and not f.shrink]


def reproducer_name(cause: str, prefix: str = "") -> str:
    """The file name of a cause's reproducer in a campaign folder (one file per cause, whichever
    engine found it: run_campaign, the workers or the nightly's HypoFuzz property)."""
    return f"{prefix}failure_{hashlib.sha1(cause.encode()).hexdigest()[:8]}.py"


__all__ = ["MAX_SHRINK_SHARE", "SHRINK_PART", "SHRINK_PER_CAUSE_S", "SHRINK_SHARE", "checked_paths", "reproducer_name", "shrinking_paths", "shows", "shrink", "shrink_failures", "shrink_reserve", "to_shrink",
           "twins_of_cause", "write_unshrunk_reproducers"]
