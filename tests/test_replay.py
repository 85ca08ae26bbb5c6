"""harness.replay in this process: saved failures replayed first, outside Hypothesis' engine, where
nothing a saved example does (no longer fail, no longer decode) can end the campaign."""

from __future__ import annotations

import time

from hypothesis.database import InMemoryExampleDatabase

from harness import paths
from harness.campaign import CampaignResult, CauseDatabase, fuzz, graph_test_key, run_campaign


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
