"""The Hypothesis adapter: one test shape for fuzzing, replaying and shrinking.

Every campaign test draws from the same graphs() (`graph_strategy`, with a campaign's `drawing`)
through the same inner test function (`graph_test`), so they share one example-database key
(`graph_test_key`): a failure the fuzz test saves is what shrinking, replaying (harness.replay),
the seeds (harness.seeds) and the nightly's HypoFuzz property (harness.fuzz_target) read back.
`CauseDatabase` files every saved example under its failure cause; `check_example` is what each
test does with one drawn example.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from hypothesis import HealthCheck, Verbosity, given, settings
from hypothesis.database import ExampleDatabase

from harness.check import check, gradcheck_verdict
from harness.devices import is_cuda
from harness.paths import Path as ExecPath
from harness.records import Record, example_record
from harness.spec import GraphSpec
import strategies


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


class Found(Exception):
    """Raised in a Hypothesis test to mark its example as failing (so it is saved or shrunk)."""


class HarnessFailed(KeyboardInterrupt):
    """Carries a harness error out of a Hypothesis test at once: Hypothesis lets KeyboardInterrupt
    through, where it would shrink any other exception as a bug of the checked code."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


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
    graph_test spells it out: the example database's key is a digest of its source, decorators
    included, so that line must not change (every database saved before would be lost)."""
    return strategies.graphs(mixed_device=is_cuda(device), **drawn)


def graph_test(body: Callable[[GraphSpec], None], device: str, drawn: Drawing,
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


def graph_test_key(node_id: str | None = None) -> bytes:
    """The example-database key of every test graph_test makes (Hypothesis' digest of the test
    function, which is the same inner function for all of them). node_id: the key of such a test
    that pytest collected as `node_id` and HypoFuzz fuzzes, which adds the node id to the digest
    (hypofuzz/collection.py, as Hypothesis' pytest plugin does for a parametrized test)."""
    from hypothesis.internal.reflection import function_digest

    inner = graph_test(lambda spec: None, "cpu", drawing([])).hypothesis.inner_test
    if node_id is not None:
        inner._hypothesis_internal_add_digest = node_id.encode()
    return function_digest(inner)


def current_choices() -> str:
    """The choice sequence of the example the running Hypothesis test is on, as the example
    database stores it (base64 text, for records), so that a parent can shrink the example a
    worker died on."""
    from hypothesis.control import current_build_context
    from hypothesis.database import choices_to_bytes

    return base64.b64encode(choices_to_bytes(current_build_context().data.choices)).decode()


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


__all__ = ["CauseDatabase", "Drawing", "Found", "HarnessFailed", "check_example", "current_choices", "drawing",
           "favours_dynamo", "favours_torch_func", "graph_strategy", "graph_test", "graph_test_key", "needs_backward"]
