"""Campaign workers: a crashing or hanging example is isolated, recorded with its
reproducer, and the campaign goes on (seeded with self-test faults)."""

import json
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
    # a crash is shrunk too, each candidate in a forked child: 15% of the budget, after start-up
    done, summary = fuzz(tmp_path, fault, *extra, budget="45s" if fault == "crash_wide" else "25s")
    assert done.returncode == 1, done.stderr  # an unknown failure
    (failure,) = summary["failures"]
    assert failure["signature"] == f"{symptom} while checking paths eager"
    assert summary["paths"]["eager"]["ok"] > 0  # examples before and after the crash count
    assert summary["examples"] == summary["paths"]["eager"]["ok"] + failure["count"]
    if fault == "crash_wide":
        # shrunk from the example the worker died on (its choice sequence, sent before it began)
        assert failure["shrink"] in ("complete", "time cap") and failure["size_after"] < failure["size_before"], failure
        # the recorded spec, checked with the fault installed, crashes the same way
        spec = tmp_path / "spec.json"
        spec.write_text(failure["spec"])
        again = subprocess.run([sys.executable, "-m", "harness", "check", str(spec), "--paths", "eager"],
                               capture_output=True, env=selfeval.subprocess_env(fault), timeout=120)
        assert again.returncode < 0 or again.returncode == 134
