"""The campaign's property as a pytest test, for HypoFuzz (`hypothesis fuzz`); `python -m harness
nightly` runs it (harness/nightly.py, docs/nightly.md).

HypoFuzz collects this file with pytest and runs the test in its own worker processes, so the
campaign's settings come from the file that HARNESS_NIGHTLY_CONFIG names (harness.nightly
.NightlyConfig: paths, device, campaign folder, example database). Without it the test is
skipped, so collecting this file elsewhere checks nothing by accident.

Each example is drawn by the campaign's own strategy (harness.engine.graph_test) and checked as a
campaign checks it (harness.engine.check_example: every path, known torch issues explaining only their
mismatches, gradcheck), and its record is appended to the campaign folder's examples.jsonl, so
`python -m harness report DIR` rebuilds the report from it. A failure whose cause is new (to this
process and to the failures saved in the shared database before) gets the harness's reproducer in
the folder, is saved for `harness fuzz` campaigns to replay first (CauseDatabase), and raises, so
HypoFuzz records it in its database and shrinks it. HypoFuzz fuzzes a test no more once it fails
in a process, so every later run of the test in that process is a shrinking candidate: a smaller
one that shows the cause rewrites the reproducer (a "shrunk" record), and none is counted as an
example.

Coverage: HypoFuzz's guidance counts the branches an example reaches. It would trace every
Python file but its own and Hypothesis' (the harness and all of torch); here it traces only
torch's modules that handle custom Functions (harness.torch_coverage.FUNCTION_MODULES), so that
new behaviour there, and nothing else, makes an example worth keeping, and the line tracer on
Python 3.11 leaves every other frame alone (it costs a call per line traced).
"""

from __future__ import annotations

import base64
import gc
import os
import time

import pytest
from hypothesis import HealthCheck, reject, settings

from harness.nightly import CONFIG_ENV, NightlyConfig

CONFIG = NightlyConfig.read(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else None


def _trace_function_modules_only() -> None:
    """Make HypoFuzz's coverage collector trace FUNCTION_MODULES only (see the module's docstring)."""
    import hypofuzz.coverage
    import hypofuzz.provider

    from harness.torch_coverage import function_module_files

    files = function_module_files()
    # should_trace decides per line (and, on 3.12+, per branch event); it is read from the module
    # when called, so replacing it here is enough there
    hypofuzz.coverage.should_trace = files.__contains__
    base = hypofuzz.coverage.CoverageCollector

    class FunctionModulesCollector(base):  # type: ignore[misc,valid-type]
        def trace_pre_312(self, frame, event, arg):
            # a frame of another file gets no line tracer at all, not one that ignores its lines
            if event == "call" and frame.f_code.co_filename not in files:
                return None
            return super().trace_pre_312(frame, event, arg)

    hypofuzz.provider.CoverageCollector = FunctionModulesCollector


#: the "shrunk" result of a cause HypoFuzz shrank (so far: it ends with the budget)
SHRUNK = "hypofuzz"


def _let_hypofuzz_shrink() -> None:
    """HypoFuzz 25.11.1 reads `slice_comments` of Hypothesis' shrink result after shrinking a
    failure, which Hypothesis renamed `span_comments` (6.170 has only that): the worker died
    with an AttributeError before it saved the failure. Give the result the old name back, only
    in this (HypoFuzz's) process and only while Hypothesis lacks it. (Hypothesis' internals, as
    HypoFuzz itself uses them; remove once HypoFuzz reads span_comments.)"""
    from hypothesis.internal.conjecture.data import ConjectureResult

    if not hasattr(ConjectureResult, "slice_comments") and hasattr(ConjectureResult, "span_comments"):
        ConjectureResult.slice_comments = property(lambda result: result.span_comments)


def _list_tests_before_each_batch() -> None:
    """HypoFuzz 25.11.1's hub ends when, at one of its checks a minute apart, no worker lists a
    test it can still fuzz (hypofuzz/hypofuzz.py:750-756, FuzzWorkerHub.start). A worker lists
    them (`valid_nodeids`, empty until then) only after it has run a batch of up to 100 examples
    of its test (hypofuzz.py:644-650 and 696, FuzzWorker.start), which on compiled or dynamo paths
    (seconds an example) takes more than that minute: the hub took the silent worker for one that
    had found a failure and ended at its first check (`Found a failing input for every test!`),
    and its worker died at the end of that batch, when it next reached the hub. Have the worker
    list its tests also as soon as it takes them from the hub, before each batch; after the batch
    it lists them as before (none, once its test has failed). Only in HypoFuzz's processes (this
    test's collection). Remove once HypoFuzz's worker reports before its first batch."""
    import hypofuzz.hypofuzz

    worker = hypofuzz.hypofuzz.FuzzWorker
    take = worker._update_targets
    if getattr(take, "lists_tests", False):  # collected again in the worker (it forks from the hub)
        return

    def _update_targets(self, nodeids) -> None:
        take(self, nodeids)
        self.shared_state["worker_state"]["valid_nodeids"] = [t.nodeid for t in self.valid_targets]

    _update_targets.lists_tests = True  # type: ignore[attr-defined]
    worker._update_targets = _update_targets


def _replay_choices_where_they_were_drawn() -> None:
    """HypoFuzz 25.11.1 replays a choice sequence (its corpus, a stability rerun of an example
    that reached new branches, a failure, anything saved in its database) by handing out its
    choices in order, one per draw its provider is asked for (hypofuzz/provider.py:803-826,
    `_pop_choice`). But a sequence holds every choice the example made, forced ones too (a list
    with min_size draws its first "one more?" forced; Hypothesis' own database form, which
    HypoFuzz saves from the observation's choice_nodes), and a forced draw never asks the
    provider: from the first forced choice on, every later choice went to the wrong draw and the
    rest of the example was drawn at random. Every graph here has one (its leaves, min_size 1), so
    no rerun ever matched its example, HypoFuzz kept none (its corpus stayed empty: it fuzzed
    blind) and a saved example came back as another graph. Give each draw the choice at its own
    position in the sequence instead: the number of choices the example has made so far, forced
    ones included. Only in HypoFuzz's processes (this test's collection); remove once HypoFuzz's
    provider counts forced choices."""
    import hypofuzz.provider
    from hypothesis.control import current_build_context
    from hypothesis.errors import InvalidArgument

    provider = hypofuzz.provider.HypofuzzProvider
    pop = provider._pop_choice
    if getattr(pop, "counts_forced", False):  # collected again in the worker (it forks from the hub)
        return

    def _pop_choice(self, choice_type, constraints):
        try:
            data = current_build_context().data  # the example being drawn
        except InvalidArgument:  # no example being drawn: as HypoFuzz does
            data = None
        if self._state is not None and data is not None:
            self._state.choice_index = len(data.nodes)
        return pop(self, choice_type, constraints)

    _pop_choice.counts_forced = True  # type: ignore[attr-defined]
    provider._pop_choice = _pop_choice


class UnknownFailure(AssertionError):
    """An example failed with a cause no known torch issue explains (its report and reproducer)."""


class _Property:
    """The state of the test in one HypoFuzz worker process."""

    def __init__(self, config: NightlyConfig, database, graph_key: bytes) -> None:
        """graph_key: engine.graph_test_key(), got outside any test (it makes a @given test,
        which Hypothesis refuses inside another as nested)."""
        from harness.engine import CauseDatabase, needs_backward
        from harness.nightly import open_log
        from harness.records import log_path, read_log
        from harness.selection import campaign_paths
        from harness.replay import shared_failures

        self.config = config
        self.paths, self.device = campaign_paths(config.paths, config.device)
        self.only_backward = needs_backward(self.paths)
        self.database, self.graph_key = database, graph_key
        # failures saved before (other nights, other machines) are counted, not raised for again: a
        # raise ends HypoFuzz's fuzzing of the test in this process
        self.known = {cause for _, causes in shared_failures(self.database) for cause in causes}
        self.harness_database = lambda causes: CauseDatabase(self.database, causes, unshrunk=True,
                                                             failures_first=True)
        self.log = open_log(config.out, shared=True)
        self.worker = f"hypofuzz-{os.getpid()}"
        # spec hashes recorded already: HypoFuzz's reruns (below), and the examples this campaign checked
        # before HypoFuzz started, some of which it runs again (the seeds nightly put in its corpus)
        log = log_path(config.out)
        self.checked: set[str] = {r["hash"] for r in (read_log(log) if log.exists() else ())
                                  if r["kind"] == "example" and "hash" in r}
        self.written: set[str] = set()  # causes whose reproducer this process wrote
        self.shrinking: dict[str, object] = {}  # the cause raised for -> the smallest spec showing it
        self.last_end = time.perf_counter()
        self.frozen = False

    def check(self, spec) -> None:
        from harness.dataflow import has_backward
        from harness.engine import check_example, current_choices
        from harness.records import GRADCHECK_CAUSE, now, record_causes, spec_hash, spec_size

        if self.only_backward and not has_backward(spec):
            reject()  # every path would call it unsupported: not an example of this campaign
        if not self.frozen:  # as campaign.fuzz: the lifetime oracle's gc.collect() then costs ~0.01 ms
            gc.collect()
            gc.freeze()
            self.frozen = True
        key = spec_hash(spec)
        record = check_example(spec, self.paths, self.device, self.config.lifetimes,
                               generate_ms=1000 * (time.perf_counter() - self.last_end), worker=self.worker, key=key,
                               twins=self.config.twins)
        self.last_end = time.perf_counter()
        causes = record_causes(record)
        if self.shrinking:
            cause, best = next(iter(self.shrinking.items()))
            if cause not in causes:
                return  # not this cause: uninteresting to HypoFuzz's shrinker
            if spec_size(spec) < spec_size(best):
                self.shrinking[cause] = spec
                reproducer = self._write_reproducer(spec, record, cause)
                self.log.write({"kind": "shrunk", "t": now(), "cause": cause, "result": SHRUNK,
                                "spec": spec.to_json(), "report": record["report"], "reproducer": reproducer,
                                "size_before": spec_size(best), "size_after": spec_size(spec)})
            raise self._failure(record, cause)
        # HypoFuzz runs an example that reached new coverage again, to see that it is stable: it is
        # checked again (its coverage must be there) but recorded once (unless it fails anew: flaky)
        if key not in self.checked or causes - self.known:
            self.checked.add(key)
            self.log.write(record)
        for first in sorted(causes - self.written):  # its reproducer as found (shrinking may rewrite it)
            self.written.add(first)
            reproducer = self._write_reproducer(spec, record, first)
            if reproducer is not None:
                self.log.write({"kind": "reproducer", "t": now(), "cause": first, "reproducer": reproducer})
        new = causes - self.known
        if not new:
            return
        self.known |= new
        self.harness_database(sorted(new)).save(self.graph_key, base64.b64decode(current_choices()))
        if self.config.keep_fuzzing:
            return
        # HypoFuzz shrinks for one cause: a path's (whose reproducer is a script) before gradcheck's
        cause = min(new, key=lambda c: (c.startswith(GRADCHECK_CAUSE), c))
        self.shrinking[cause] = spec
        raise self._failure(record, cause)

    def _failure(self, record, cause: str) -> UnknownFailure:
        """What the test raises for `cause` (HypoFuzz keeps its message with the failure)."""
        from harness.records import GRADCHECK_CAUSE
        from harness.shrink import reproducer_name

        where = ("none (a gradcheck cause)" if cause.startswith(GRADCHECK_CAUSE)
                 else os.path.join(self.config.out, reproducer_name(cause)))
        return UnknownFailure(f"{record['report']}\n\nreproducer: {where}")

    def _write_reproducer(self, spec, record, cause: str) -> str | None:
        """The harness's reproducer of `cause` in the campaign folder (a gradcheck cause has none:
        a reproducer script checks paths)."""
        from harness.records import GRADCHECK_CAUSE
        from harness.repro import write_reproducer
        from harness.shrink import reproducer_name

        if cause.startswith(GRADCHECK_CAUSE):
            return None
        failing = sorted(name for name, o in record["outcomes"].items() if o.get("cause") == cause)
        destination = os.path.join(self.config.out, reproducer_name(cause))
        write_reproducer(spec, failing, self.device, record["report"], destination)
        return destination


def _make_test():
    from harness.engine import drawing, graph_test, graph_test_key
    from harness.selection import campaign_paths

    _trace_function_modules_only()
    _let_hypofuzz_shrink()
    _list_tests_before_each_batch()
    _replay_choices_where_they_were_drawn()
    # HypoFuzz fuzzes a test only when its database is settings().database at collection time
    settings.register_profile("harness-nightly", settings(database=CONFIG.example_database()))
    settings.load_profile("harness-nightly")
    database, graph_key = settings().database, graph_test_key()
    state: list[_Property] = []  # made on the first example, in the worker process

    def body(spec) -> None:
        if not state:
            state.append(_Property(CONFIG, database, graph_key))
        state[0].check(spec)

    paths, device = campaign_paths(CONFIG.paths, CONFIG.device)
    test = graph_test(body, device, drawing(paths), database=database)
    # graph_test suppresses every health check, nested_given too, which HypoFuzz takes to mean
    # nested @given tests and will not fuzz; the property nests none. (Set on the test, not passed
    # to graph_test: its @settings line is part of the database key of every campaign.)
    used = test._hypothesis_internal_use_settings
    test._hypothesis_internal_use_settings = settings(
        used, suppress_health_check=[c for c in used.suppress_health_check if c is not HealthCheck.nested_given])
    return test


if CONFIG is not None:
    test_campaign_property = _make_test()
else:
    @pytest.mark.skip(reason=f"run by `python -m harness nightly` (no ${CONFIG_ENV})")
    def test_campaign_property() -> None:
        pass
