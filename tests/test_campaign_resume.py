"""Persistence: a campaign killed with SIGKILL mid-run resumes from its log; nothing already
written is lost, counts are rebuilt from the log, earlier failures are replayed first. SIGTERM
ends a campaign as Ctrl-C does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness.selfeval import subprocess_env
from harness.results import CampaignResult
from harness.records import log_path, read_log


def examples_in(folder) -> list[dict]:
    path = log_path(folder)
    return [r for r in read_log(path) if r["kind"] == "example"] if path.exists() else []


def test_a_killed_campaign_resumes_with_nothing_lost(tmp_path):
    out = tmp_path / "campaign"
    env = subprocess_env("wrong_backward")  # failures to replay on resume
    errors = tmp_path / "stderr.txt"
    with open(errors, "w") as stderr:
        first = subprocess.Popen([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--budget", "240s",
                                  "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                                 start_new_session=True)
    deadline = time.monotonic() + 200
    while time.monotonic() < deadline and first.poll() is None:
        recorded = examples_in(out)
        if len(recorded) >= 15 and any(r.get("spec") for r in recorded):
            break
        time.sleep(0.5)
    assert first.poll() is None, errors.read_text()[-2000:]
    os.killpg(first.pid, signal.SIGKILL)  # the campaign and its worker, as an out-of-memory kill would
    first.wait()
    before = log_path(out).read_text()
    killed = CampaignResult.from_records(read_log(log_path(out)))
    assert killed.examples >= 15 and killed.failures

    summary_file = tmp_path / "summary.json"
    # 60 s: the session's start (imports, its worker's start and warm-up) takes about 16 s of it here, and
    # the unshrunk causes keep half of it; at 30 s CI's loaded cores once left no time for a new example
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--resume", str(out), "--budget", "60s",
                           "--json", str(summary_file)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]  # the seeded failures
    after = log_path(out).read_text()
    whole = before[:before.rfind("\n") + 1]  # a line the kill cut short was never written
    assert after.startswith(whole)
    records = list(read_log(log_path(out)))
    rebuilt = CampaignResult.from_records(records)
    summary = json.loads(summary_file.read_text())
    # the counts printed are the counts the log holds, and the examples before the kill are in them
    assert summary["examples"] == rebuilt.examples == len(examples_in(out)) > killed.examples
    assert summary["paths"] == rebuilt.as_json()["paths"]
    assert {f["signature"]: f["count"] for f in summary["failures"]} == {
        s: f.count for s, f in rebuilt.failures.items()}
    # the resumed session replays every earlier failure before it checks a new example
    starts = [i for i, r in enumerate(records) if r["kind"] == "start"]
    assert len(starts) == 2 and records[starts[1]]["resumed"]
    second = records[starts[1] + 1:]
    first_example = next(i for i, r in enumerate(second) if r["kind"] == "example")
    replayed = {r["cause"]: r["result"] for r in second[:first_example] if r["kind"] == "replay"}
    assert replayed == {s: "still fails" for s, f in killed.failures.items() if f.shrinkable}
    assert (out / "report.html").exists() and (out / "report.md").exists()


def test_a_failure_found_fixed_on_one_resume_stays_fixed_on_the_next():
    """A resumed campaign replays its earlier failures first. The replay of older harnesses (inside
    Hypothesis' engine) dropped an example that no longer failed from its cause's corpus, so the
    next resume found nothing under the cause: the summary must still say "fixed", not "not saved"."""
    from harness.spec import GraphSpec

    cause = "error vs math at backward error (TypeError)"
    example = {"kind": "example", "t": 2.0, "worker": "w0.0", "hash": "0" * 16, "backward": True,
               "gradcheck": "skipped", "generate_ms": 1.0, "check_ms": 1.0, "features": {},
               "outcomes": {"eager": {"status": "failed", "cause": cause}},
               "spec": GraphSpec().to_json(), "report": "[eager] raised"}
    start = {"kind": "start", "t": 1.0, "paths": ["eager"], "device": "cpu", "lifetimes": True, "budget_s": 60.0}
    records = [start, example, {**start, "t": 3.0}, {"kind": "replay", "t": 4.0, "cause": cause, "result": "fixed"},
               {**start, "t": 5.0}, {"kind": "replay", "t": 6.0, "cause": cause, "result": "not saved"}]
    assert CampaignResult.from_records(records).failures[cause].replay == "fixed"
    still = records[:4] + [{**start, "t": 5.0}, {"kind": "replay", "t": 6.0, "cause": cause, "result": "still fails"}]
    assert CampaignResult.from_records(still).failures[cause].replay == "still fails"


def test_sigterm_ends_a_campaign_as_ctrl_c_does(tmp_path):
    """A cancelled CI job or `timeout` sends SIGTERM: the campaign stops its workers and writes its
    summary and reports from what it checked, and says how to resume."""
    out = tmp_path / "campaign"
    campaign = subprocess.Popen([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--workers", "1",
                                 "--budget", "240s", "--out", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 200
    while time.monotonic() < deadline and campaign.poll() is None and len(examples_in(out)) < 5:
        time.sleep(0.5)
    assert campaign.poll() is None
    campaign.send_signal(signal.SIGTERM)  # the campaign's own process only, not its worker
    stdout, stderr = campaign.communicate(timeout=120)
    assert campaign.returncode == 130, stderr[-3000:]
    assert f"fuzz --resume {out}" in stdout
    examples = len(examples_in(out))
    assert f": {examples} examples" in stdout and examples >= 5
    assert (out / "report.md").exists() and (out / "report.html").exists()
    with pytest.raises(ProcessLookupError):  # no worker outlives it
        os.killpg(campaign.pid, 0)
