"""Real shrinking: a failure is shrunk from the example that failed, by Hypothesis' own
shrinker over the example database, once per cause, within a time cap."""

from __future__ import annotations

import time

from hypothesis.database import InMemoryExampleDatabase

from harness.campaign import fuzz
from harness.results import CampaignResult
from harness.shrink import shrink, shrink_failures
from harness.check import check
from harness.records import cause_of, spec_size
from harness.replay import replay_cause

#: a shrinking time cap; on CI's two loaded cores a hard example (a 53-part spec whose first moves
#: were dtype and shape) once made no size progress in 15 s, where 5 s is enough on a quiet machine
CAP_S = 30.0


def fuzz_until_found(seeded, database, result):
    """The campaign's own fuzz loop, until the seeded bug shows."""
    return fuzz_until_found_by([seeded], database, result)


def fuzz_until_found_by(paths, database, result):
    known: set[str] = set()
    fuzz(paths, until=time.perf_counter() + 180, device="cpu", database=database, lifetimes=False,
         on_record=result.add_record, known=known, until_failure=True)
    assert known == set(result.failures)  # the example was saved under its cause
    return list(result.failures.values())


def test_a_rare_failure_is_shrunk_from_its_own_example_within_its_time_cap(tmp_path, seeded_path):
    seeded, seeded_bug = seeded_path, seeded_path.bug
    database = InMemoryExampleDatabase()
    result = CampaignResult(["eager:seeded"], "cpu")
    (failure,) = fuzz_until_found(seeded, database, result)
    assert failure.paths == {"eager:seeded"} and failure.signature.startswith("mismatch vs")
    assert seeded_bug(failure.spec)

    # a resumed campaign replays it first, and that leaves it to be shrunk still
    assert replay_cause(failure, [seeded], "cpu", database, lifetimes=False,
                        until=time.perf_counter() + 60) == "still fails"

    started = time.perf_counter()
    spec, how = shrink(failure, [seeded], "cpu", database, lifetimes=False, until=started + CAP_S)
    assert time.perf_counter() - started < CAP_S + 5  # at most one check past the cap
    assert how in ("complete", "time cap")
    assert spec_size(spec) < failure.size_before, (spec, failure.spec)
    assert failure.signature in {cause_of(o) for o in check(spec, [seeded], "cpu", lifetimes=False).failed}
    assert seeded_bug(spec) and not spec.hooks  # what the bug needs is kept, the rest goes

    # Shrinking again (as a resumed campaign does) starts from what Hypothesis kept under the
    # cause and ends smaller than the original. (Not necessarily <= spec_size(spec): Hypothesis
    # orders examples by their choice sequences, not by our spec_size.)
    records = []
    shrink_failures([failure], [seeded], "cpu", database, False, until=time.perf_counter() + 30,
                    out_dir=tmp_path, on_record=records.append)
    (done,) = records
    assert done["kind"] == "shrunk" and done["size_after"] < done["size_before"], done
    assert (tmp_path / done["reproducer"].split("/")[-1]).exists()
    result.add_record(done)
    assert result.failures[failure.signature].size == done["size_after"]


def test_a_gradcheck_failure_is_shrunk_from_its_own_example(tmp_path):
    """A seeded formula fault (selfeval's wrong_backward: one gradient 1.5 times too large),
    seen by gradcheck alone (no path is checked): its cause is saved and shrunk like a path's."""
    from harness import selfeval
    from harness.check import gradcheck_verdict

    database = InMemoryExampleDatabase()
    result = CampaignResult([], "cpu")
    with selfeval.installed("wrong_backward"):
        (failure,) = fuzz_until_found_by([], database, result)
        assert failure.signature.startswith("gradcheck: ") and failure.shrinkable
        records = []
        shrink_failures([failure], [], "cpu", database, False, until=time.perf_counter() + CAP_S,
                        out_dir=tmp_path, on_record=records.append)
        (done,) = records
        assert done["result"] in ("complete", "time cap") and done["size_after"] < done["size_before"], done
        assert done["report"].startswith("gradcheck failed: ")
        script = (tmp_path / done["reproducer"].split("/")[-1]).read_text()  # a plain gradcheck script
        assert "torch.autograd.gradcheck" in script and "import harness" not in script, script
        from harness.spec import GraphSpec
        assert gradcheck_verdict(GraphSpec.from_json(done["spec"]))[0] == "failed"


def test_a_shrinking_cut_short_is_taken_up_again_by_the_next_one(monkeypatch, seeded_path):
    """Hypothesis keeps a shrinking's best example in the cause's primary corpus and skips shrinking
    what it finds there (taken as shrunk already): one cut short by its time cap is moved back to the
    secondary corpus, so the next shrinking (a resumed campaign) goes on from it."""
    from harness import shrink as shrink_module

    database = InMemoryExampleDatabase()
    result = CampaignResult(["eager:seeded"], "cpu")
    (failure,) = fuzz_until_found(seeded_path, database, result)
    real_shows = shrink_module.shows
    calls = []

    def shows_until_cut(*args, **kwargs):  # the time cap, after the replay and two candidates
        if len(calls) == 3:
            raise shrink_module._TimeUp
        calls.append(real_shows(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(shrink_module, "shows", shows_until_cut)
    first, how = shrink(failure, [seeded_path], "cpu", database, lifetimes=False, until=time.perf_counter() + 60)
    assert how == "time cap" and calls[0], calls

    def counted(*args, **kwargs):
        calls.append(real_shows(*args, **kwargs))
        return calls[-1]

    calls.clear()
    monkeypatch.setattr(shrink_module, "shows", counted)
    spec, how = shrink(failure, [seeded_path], "cpu", database, lifetimes=False, until=time.perf_counter() + CAP_S)
    # more than the replay of the saved example (and the final one that reports it): candidates were tried
    assert len(calls) > 2, (how, calls)
    assert seeded_path.bug(spec)


def test_a_cause_is_shrunk_on_the_paths_that_decide_it():
    """A candidate shows a cause of one family exactly when that family's paths and eager show it
    (records.causes_of), so shrinking checks those alone: an eager cause, seen on every path, on
    eager only (no compile per candidate); the native apply's on eager, owned and borrowed; a
    compiling path's on eager and that path. A cause without a family keeps every path."""
    from harness import paths as registry
    from harness.records import Cause
    from harness.results import Failure
    from harness.shrink import shrinking_paths
    from harness.spec import GraphSpec

    campaign = [registry.get(n) for n in ("eager", "owned", "borrowed", "compiled", "dynamo")]
    seen_on = {"eager", "owned", "borrowed", "compiled", "dynamo"}

    def narrowed(family: str) -> list[str]:
        cause = str(Cause("mismatch vs math at backward grad", family, "values"))
        return [p.name for p in shrinking_paths(Failure(cause, GraphSpec(), "", paths=seen_on), campaign)]

    assert narrowed("eager") == ["eager"]
    assert narrowed("native") == narrowed("owned") == ["eager", "owned", "borrowed"]
    assert narrowed("compiled") == ["eager", "compiled"]
    assert narrowed("dynamo") == ["eager", "dynamo"]
    crash = Failure("crash (signal SIGSEGV) while checking paths owned,compiled", GraphSpec(), "", paths=seen_on)
    assert [p.name for p in shrinking_paths(crash, campaign)] == ["eager", "owned", "borrowed", "compiled", "dynamo"]


def test_an_eager_cause_shows_on_eager_alone_as_on_every_path():
    """The equivalence the narrowing rests on, on a real fault: a Function's backward 1.5x too large
    (selfeval wrong_backward) is eager's cause on every path, and eager alone shows the same cause."""
    from harness import paths as registry
    from harness import selfeval
    from harness.records import causes_of
    from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

    spec = GraphSpec(leaves=(LeafSpec(),), functions=(FunctionSpec(
        args=(Arg("x0"),), outputs=(OutputSpec("compute", terms=(Term(0, "linear", 2.0),)),), code="plain"),))
    every = [registry.get(n) for n in ("eager", "owned", "borrowed", "compiled")]
    with selfeval.installed("wrong_backward"):
        on_every = causes_of(check(spec, every, "cpu", lifetimes=False).outcomes.values())
        on_eager = causes_of(check(spec, every[:1], "cpu", lifetimes=False).outcomes.values())
    assert set(on_every) == {"eager", "owned", "borrowed", "compiled"}, on_every
    assert set(on_every.values()) == set(on_eager.values()) == {on_eager["eager"]}
    assert on_eager["eager"].endswith("on eager [values]")
