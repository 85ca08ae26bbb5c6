"""Two campaigns through the command line, each with one seeded fault of the same symptom on
another path family: compiled autograd's x1.5 gradient, and the x1.5 gradient of Dynamo's
traced backward (harness/selfeval/compilers.py). Their wrong gradients read the same words
("mismatch vs math at backward grad"), and once were one cause: `diff` called the second one
old. Keyed by path family, they are two causes, and `diff` of the first campaign against the
second reports the second as new and exits 1 (what the nightly workflow goes red on). (The same
spec under both faults gives the same words and two causes in tests/test_causes.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness import selfeval
from harness.records import Cause
from harness.report import load

FAULTS = {"compiled": "compiled_autograd_backward_scaled", "dynamo": "dynamo_traced_backward_scaled"}


def _fuzz(family: str, out) -> subprocess.CompletedProcess:
    """A campaign on eager and the fault's family alone: twice the examples of one on both, where
    (2 cores) a compiled or dynamo example takes seconds."""
    return subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", f"eager,{family}", "--budget", "150s",
                           "--workers", "1", "--out", str(out)],
                          env=selfeval.subprocess_env(FAULTS[family]), capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_two_faults_with_the_same_symptom_are_two_causes_and_diff_calls_the_second_new(tmp_path):
    causes = {}
    for family in FAULTS:
        done = _fuzz(family, tmp_path / family)
        assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # an unknown failure
        causes[family] = {Cause.parse(c) for c in load(tmp_path / family).failures}
    # each fault's wrong gradients are causes of its own family
    assert any(c.family == "compiled" and c.fingerprint == "values" for c in causes["compiled"]), causes
    dynamo = {c for c in causes["dynamo"] if c.family == "dynamo" and c.fingerprint == "values"}
    assert dynamo, causes

    done = subprocess.run([sys.executable, "-m", "harness", "diff", str(tmp_path / "compiled"),
                           str(tmp_path / "dynamo")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    new = done.stdout.split("new failures", 1)[1].split("fixed (seen last time", 1)[0]
    # every Dynamo cause is new, those whose words the compiled campaign showed too (one cause,
    # when causes were their words alone) included
    assert all(f": {cause}" in new for cause in dynamo), done.stdout


@pytest.mark.slow
def test_a_cause_an_older_harness_saved_is_replayed_by_its_words_on_the_new_key():
    """The shared database holds a failing example under the causes it showed; one an older
    harness saved holds its words alone. Replayed first, it still fails where its example shows
    those words (on any family: the database kept no paths), and did not reproduce where not."""
    import time

    from hypothesis.database import InMemoryExampleDatabase

    from harness import paths
    from harness.campaign import fuzz
    from harness.engine import CauseDatabase
    from harness.results import CampaignResult
    from harness.replay import replay_first, shared_failures

    chosen = [paths.get("eager"), paths.get("compiled")]
    database, found = InMemoryExampleDatabase(), CampaignResult(["eager", "compiled"], "cpu")
    with selfeval.installed(FAULTS["compiled"]):
        fuzz(chosen, until=time.perf_counter() + 300, device="cpu", database=database, lifetimes=False,
             on_record=found.add_record, known=set(), until_failure=True)
    (value, causes), = shared_failures(database)
    (cause,) = causes
    assert Cause.parse(cause).family == "compiled", cause
    # as an older harness saved it: its words alone
    words = Cause.parse(cause).words
    database.delete(CauseDatabase.causes_key(value), cause.encode())
    database.save(CauseDatabase.causes_key(value), words.encode())
    assert shared_failures(database) == [(value, [words])]

    def replayed() -> dict[str, str]:
        seen: list[dict] = []
        replay_first([], chosen, "cpu", database, False, until=time.perf_counter() + 300, on_record=seen.append,
                     known=set())
        return {r["cause"]: r["result"] for r in seen if r["kind"] == "replay"}

    assert replayed() == {words: "did not reproduce"}  # without the fault: as on a fixed torch
    with selfeval.installed(FAULTS["compiled"]):
        assert replayed() == {words: "still fails"}
