"""The budget covers everything: with a bug that fails many examples, a campaign still ends
within its budget, shrinking and reports included."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from harness.selfeval import subprocess_env

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
    assert len(summary["failures"]) >= 2 and summary["examples"] > 0
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
