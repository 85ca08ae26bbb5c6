"""Real shrinking: a failure is shrunk from the example that failed, by Hypothesis' own
shrinker over the example database, once per cause, within a time cap."""

from __future__ import annotations

import time
from dataclasses import replace

import torch
from hypothesis.database import InMemoryExampleDatabase

from harness import paths
from harness.build import BuiltGraph
from harness.campaign import CampaignResult, fuzz, replay, shrink, shrink_failures
from harness.check import check
from harness.records import cause_of, spec_size
from harness.run import RunResult
from harness.spec import GraphSpec

#: the seeded bug needs a Function with this many tensor inputs and a tanh term: rare enough
#: that the first example showing it is big, and a search from scratch rarely finds it
WIDE = 6
CAP_S = 15.0


def seeded_bug(spec: GraphSpec) -> bool:
    return any(len(fn.tensor_slots) >= WIDE and any(t.op == "tanh" for o in fn.outputs for t in o.terms)
               for fn in spec.functions)


class SeededPath:
    """Eager, with a wrong forward output whenever `seeded_bug` holds (a test double beside
    the real eager run, which check() always makes too)."""

    name = "eager:seeded"  # of the eager family: its results are compared as eager's are
    exact_vs_eager = True

    def available(self) -> str | None:
        return None

    def unsupported(self, spec: GraphSpec) -> str | None:
        return None

    def run(self, built: BuiltGraph) -> RunResult:
        result = paths.get("eager").run(built)
        if seeded_bug(built.spec) and result.tensors.get("forward"):
            forward = dict(result.tensors["forward"])
            role = next((r for r, t in forward.items() if isinstance(t, torch.Tensor) and t.numel()), None)
            if role is not None:  # (with empty tensors there is nothing to get wrong)
                forward[role] = forward[role] + 1
                result = replace(result, tensors={**result.tensors, "forward": forward})
        return replace(result, path=self.name)


def fuzz_until_found(seeded, database, result):
    """The campaign's own fuzz loop, until the seeded bug shows."""
    known: set[str] = set()
    fuzz([seeded], until=time.perf_counter() + 180, device="cpu", database=database, lifetimes=False,
         on_record=result.add_record, known=known, until_failure=True)
    assert known == set(result.failures)  # the example was saved under its cause
    return list(result.failures.values())


def test_a_rare_failure_is_shrunk_from_its_own_example_within_its_time_cap(tmp_path):
    seeded = paths.register(SeededPath())
    database = InMemoryExampleDatabase()
    result = CampaignResult(["eager:seeded"], "cpu")
    (failure,) = fuzz_until_found(seeded, database, result)
    assert failure.paths == {"eager:seeded"} and failure.signature.startswith("mismatch vs")
    assert seeded_bug(failure.spec)

    # a resumed campaign replays it first, and that leaves it to be shrunk still
    assert replay(failure, [seeded], "cpu", database, lifetimes=False) == "still fails"

    started = time.perf_counter()
    spec, how = shrink(failure, [seeded], "cpu", database, lifetimes=False, until=started + CAP_S)
    assert time.perf_counter() - started < CAP_S + 5  # at most one check past the cap
    assert how in ("complete", "time cap")
    assert spec_size(spec) < failure.size_before, (spec, failure.spec)
    assert failure.signature in {cause_of(o) for o in check(spec, [seeded], "cpu", lifetimes=False).failed}
    assert seeded_bug(spec) and not spec.hooks  # what the bug needs is kept, the rest goes

    # Hypothesis kept the shrunk example under the cause: shrinking again starts from it
    records = []
    shrink_failures([failure], [seeded], "cpu", database, False, until=time.perf_counter() + 30,
                    out_dir=tmp_path, on_record=records.append)
    (done,) = records
    assert done["kind"] == "shrunk" and done["size_after"] <= spec_size(spec) < done["size_before"]
    assert (tmp_path / done["reproducer"].split("/")[-1]).exists()
    result.add_record(done)
    assert result.failures[failure.signature].size == done["size_after"]
