"""harness.replay in this process: saved failures replayed first, outside Hypothesis' engine, where
nothing a saved example does (no longer fail, no longer decode) can end the campaign."""

from __future__ import annotations

import time

from hypothesis.database import InMemoryExampleDatabase

from harness import paths
from harness.campaign import fuzz, run_campaign
from harness.engine import CauseDatabase, graph_test_key
from harness.results import CampaignResult


def test_a_saved_failure_that_no_longer_fails_did_not_reproduce_and_the_campaign_goes_on(seeded_path, tmp_path):
    database = InMemoryExampleDatabase()
    first = CampaignResult([seeded_path.name], "cpu")
    fuzz([seeded_path], until=time.perf_counter() + 240, device="cpu", database=database, lifetimes=False,
         on_record=first.add_record, known=set(), until_failure=True)
    (cause,) = first.failures
    # a saved example that no longer decodes (saved by a generator since changed), under a cause of its own
    garbage = CauseDatabase(database, ["mismatch vs math at forward output"], failures_first=True)
    garbage.save(graph_test_key(), b"\x00not a choice sequence")

    # the next campaign checks plain eager, where the seeded bug is absent: as on a fixed torch
    second = run_campaign([paths.get("eager")], budget_s=60, database=database, max_examples=5, lifetimes=False,
                          out_dir=tmp_path)
    assert second.replays == {cause: "did not reproduce", "mismatch vs math at forward output": "did not reproduce"}
    assert not second.failures and second.replay_examples == 1  # the garbage is not an example
    assert second.examples == 1 + 5  # and fuzzing went on after the replay
    assert "replayed first: 2 saved failure cause(s) (did not reproduce: 2)" in second.summary()

    # on the path it was found on, it still fails, is replayed once and is a failure of the campaign again
    third = run_campaign([seeded_path], budget_s=60, database=database, max_examples=5, lifetimes=False,
                         out_dir=tmp_path)
    assert third.replays[cause] == "still fails" and third.failures[cause].replay == "still fails"


# --- the harness's own errors: never "did not reproduce", never "fixed" ----------------------


def _campaign_with_a_saved_failure(tmp_path, capsys):
    """A first campaign with a seeded wrong backward: its causes saved in its example database."""
    from harness import selfeval
    from harness.cli import main

    first = tmp_path / "first"
    # (30 examples: selfeval finds the fault in 4, and 8 were once not enough when the drawing changed)
    with selfeval.installed("wrong_backward"):
        code = main(["fuzz", "--paths", "eager", "--workers", "0", "--budget", "40s", "--max-examples", "30",
                     "--no-twins", "--no-seeds", "--out", str(first)])
    out = capsys.readouterr()
    assert code == 1, out.out[-3000:]
    return first


def _broken_decoder(monkeypatch):
    from hypothesis import strategies as st

    from harness import replay

    def fails_to_draw(device, drawn):
        def broken(_):
            raise KeyError("a decoder bug")
        return st.just(None).map(broken)
    monkeypatch.setattr(replay, "graph_strategy", fails_to_draw)


def _broken_oracle(monkeypatch):
    """The math oracle and the campaign's gradcheck both broken (the harness's side of each)."""
    from harness import campaign, check
    from harness.oracles import math
    from harness.oracles.math import OracleError

    def broken(*args, **kwargs):
        raise OracleError("an oracle bug")
    monkeypatch.setattr(check, "run_math", broken)
    monkeypatch.setattr(math, "build", broken)
    monkeypatch.setattr(campaign, "warm_up", lambda *args: None)  # (a broken warm-up alone exits 2 before replaying)


def test_a_harness_error_while_replaying_is_a_harness_error_not_a_fix(tmp_path, capsys, monkeypatch):
    """The next campaign (torch "fixed": no fault) replays the saved failures with a broken decoder,
    then with a broken oracle: every cause reads "harness error", none "did not reproduce", the
    campaign exits 2, and `diff` calls nothing fixed (and exits 2)."""
    from harness.cli import main
    from harness.report import load

    first = _campaign_with_a_saved_failure(tmp_path, capsys)
    causes = set(load(first).failures)
    for name, breaking in (("decoder", _broken_decoder), ("oracle", _broken_oracle)):
        with monkeypatch.context() as patched:
            breaking(patched)
            tonight = tmp_path / name
            code = main(["fuzz", "--paths", "eager", "--workers", "0", "--budget", "20s", "--max-examples", "2",
                         "--no-twins", "--no-seeds", "--out", str(tonight), "--database", str(first / "examples-db")])
        out = capsys.readouterr()
        assert code == 2, out.out + out.err
        result = load(tonight)
        assert result.replays and set(result.replays.values()) == {"harness error"}, result.replays
        assert set(result.replays) >= causes
        assert {e["during"] for e in result.harness_errors} >= {"replaying"}
        assert f"{name} bug" in str(result.harness_errors[0]["error"])
        assert "did not reproduce" not in out.out and "fixed" not in out.out, out.out
        assert "the harness itself failed" in result.verdict()
        assert main(["diff", str(first), str(tonight)]) == 2
        diffed = capsys.readouterr().out
        assert "fixed" not in diffed and "the harness itself failed tonight" in diffed, diffed
        assert all(cause in diffed for cause in causes)


def test_a_harness_error_while_shrinking_is_recorded_and_the_next_cause_goes_on(tmp_path, monkeypatch):
    import time

    from hypothesis.database import InMemoryExampleDatabase

    from harness import selfeval
    from harness.campaign import fuzz
    from harness.records import HARNESS_ERROR
    from harness.results import CampaignResult, shrink_note
    from harness.shrink import shrink_failures

    database, result = InMemoryExampleDatabase(), CampaignResult(["eager"], "cpu")
    with selfeval.installed("wrong_backward"):
        fuzz([paths.get("eager")], until=time.perf_counter() + 120, device="cpu", database=database,
             lifetimes=False, on_record=result.add_record, known=set(), until_failure=True)
        failures = list(result.failures.values())
        assert failures
        _broken_oracle(monkeypatch)
        records: list[dict] = []
        shrink_failures(failures, [paths.get("eager")], "cpu", database, False, until=time.perf_counter() + 60,
                        out_dir=tmp_path, on_record=records.append)
    kinds = [r["kind"] for r in records]
    assert kinds == ["harness_error", "shrunk"] * len(failures), (kinds, records, [f.signature for f in failures])
    for record in records:
        result.add_record({**record, "t": record["t"]})
    assert all(f.shrink == "harness error" for f in result.failures.values())
    assert all(shrink_note(f) == "not shrunk: the harness itself failed (harness errors below)"
               for f in result.failures.values())
    assert "an oracle bug" in result.harness_errors[0]["error"] and result.harness_errors[0]["during"] == "shrinking"
    assert HARNESS_ERROR == "harness error"
