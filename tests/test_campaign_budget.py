"""The budget covers everything: with a bug that fails many examples, a campaign still ends
within its budget, shrinking and reports included."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from harness.selfeval import subprocess_env
from harness.shrink import MAX_SHRINK_SHARE, SHRINK_PER_CAUSE_S, SHRINK_SHARE, shrink_reserve

BUDGET_S = 30
#: spawning the process and the OS reaping it; the budget itself runs from the process's start to its exit
SLACK_S = 8


def test_a_campaign_with_many_failures_ends_within_its_budget(tmp_path):
    env = subprocess_env("wrong_backward")
    summary_file = tmp_path / "summary.json"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager,owned", "--budget",
                           f"{BUDGET_S}s", "--out", str(tmp_path / "campaign"), "--json", str(summary_file)],
                          env=env, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    assert done.returncode == 1, done.stderr[-3000:]
    summary = json.loads(summary_file.read_text())
    assert summary["failures"] and summary["examples"] > 0
    # the one-time native build and warm-up are not charged to the budget, and said so
    uncharged = summary["uncharged_seconds"]
    assert 0 < uncharged < BUDGET_S
    assert took < BUDGET_S + SLACK_S + uncharged, f"the campaign took {took:.1f} s for a {BUDGET_S} s budget"
    assert summary["seconds"] < BUDGET_S + uncharged
    # every cause is accounted for: shrunk (to its time cap or the end), or said to be out of budget
    assert "progress " in done.stdout  # plain progress lines: stdout is not a terminal
    for f in summary["failures"]:
        assert f["size_after"] <= f["size_before"]
        assert f["reproducer"] or not f["paths"]  # shrunk or not, each path failure has its script
    assert (tmp_path / "campaign" / "report.html").exists()


def test_a_short_campaign_stops_fuzzing_to_shrink_the_cause_it_found(tmp_path):
    """In this process (no worker start-up to wait for) with a fault every example shows: the cause
    is found at once, and fuzzing stops where its minute begins (half of a 40 s budget, where a
    quarter alone would have let it fuzz to 30 s)."""
    from hypothesis.database import InMemoryExampleDatabase

    from harness import paths, selfeval
    from harness.campaign import run_campaign

    records = []
    with selfeval.installed("wrong_backward"):
        result = run_campaign([paths.get("eager")], budget_s=40, out_dir=tmp_path, lifetimes=False,
                              database=InMemoryExampleDatabase(), on_record=records.append)
    assert result.failures
    start = next(r["t"] for r in records if r["kind"] == "start")
    first_failed = min(r["t"] for r in records if r["kind"] == "example" and any(
        o["status"] == "failed" for o in r["outcomes"].values()))
    stopped = max(r["t"] for r in records if r["kind"] == "example")
    assert first_failed - start < 10, "the fault shows at once"
    assert 40 * (1 - MAX_SHRINK_SHARE) - 2 < stopped - start < 40 * (1 - MAX_SHRINK_SHARE) + 3, stopped - start


def test_the_shrinking_reserve_grows_with_the_causes_up_to_half_the_budget():
    assert shrink_reserve(8 * 3600, 3) == SHRINK_SHARE * 8 * 3600  # a long campaign keeps its quarter
    assert shrink_reserve(600, 1) == SHRINK_SHARE * 600 and shrink_reserve(600, 4) == 4 * SHRINK_PER_CAUSE_S
    assert shrink_reserve(150, 1) == SHRINK_PER_CAUSE_S and shrink_reserve(150, 2) == MAX_SHRINK_SHARE * 150
