"""Campaign workers: a crashing or hanging example is isolated, recorded with its
reproducer, and the campaign goes on (seeded with self-test faults)."""

import json
import os
import subprocess
import sys

import pytest

from harness import selfeval


def fuzz(tmp_path, fault, *extra, budget="25s"):
    env = selfeval.subprocess_env(fault)  # every process of the campaign starts with the fault
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--budget", budget, "--json", str(out),
         "--out", str(tmp_path / "failures"), *extra], capture_output=True, text=True, env=env, timeout=300)
    return done, json.loads(out.read_text())


@pytest.mark.parametrize("fault, extra, symptom", [
    ("crash_wide", (), "crash (signal SIGABRT)"),
    ("hang_wide", ("--hang-timeout", "3s"), "hang (no progress for 3 s)"),
])
def test_a_crash_or_hang_is_isolated_and_the_campaign_goes_on(tmp_path, fault, extra, symptom):
    # a crash is shrunk too, each candidate in a forked child: 25% of the budget, after start-up.
    # Without the seeds (harness/seeds.py): a crash on a seed, shrunk already, has nothing to shrink
    done, summary = fuzz(tmp_path, fault, *extra, "--no-seeds", budget="45s" if fault == "crash_wide" else "25s")
    assert done.returncode == 1, done.stderr  # an unknown failure
    assert len(summary["failures"]) == 1, [(f["signature"], f["count"], f["spec"]) for f in summary["failures"]]
    (failure,) = summary["failures"]
    assert failure["signature"] == f"{symptom} while checking paths eager"
    assert summary["paths"]["eager"]["ok"] > 0  # examples before and after the crash count
    assert summary["examples"] == summary["paths"]["eager"]["ok"] + failure["count"]
    if fault == "crash_wide":
        # shrunk from the example the worker died on (its choice sequence, sent before it began): the
        # shrinker ran on it to its end or its cap (a first crash already near its minimum, 34 or 40,
        # was seen to end "complete" with no smaller crash; from 86 it reached 42)
        assert failure["shrink"] in ("complete", "time cap") and failure["size_after"] <= failure["size_before"], failure
        # the recorded spec, checked with the fault installed, crashes the same way
        spec = tmp_path / "spec.json"
        spec.write_text(failure["spec"])
        again = subprocess.run([sys.executable, "-m", "harness", "check", str(spec), "--paths", "eager"],
                               capture_output=True, env=selfeval.subprocess_env(fault), timeout=120)
        assert again.returncode < 0 or again.returncode == 134


def test_a_worker_dead_outside_any_example_still_leaves_the_summary_and_reports(tmp_path):
    """A worker that dies starting up (here: exit code 3 before it imports anything) is no failure of a
    graph, and no campaign can go on; the command says so in one sentence, without a traceback, after
    writing the summary and reports of what was checked."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os, sys\nif 'harness.workers' in sys.orig_argv:\n    os._exit(3)\n")
    out = tmp_path / "campaign"
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--budget", "60s",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode == 2, (done.stdout + done.stderr)[-3000:]
    assert "Traceback" not in done.stderr
    assert "error: the campaign stopped: campaign worker w0.0 ended with crash (exit code 3) outside any example" \
        in done.stderr
    assert "no failures" in done.stdout and (out / "report.md").exists() and (out / "report.html").exists()
