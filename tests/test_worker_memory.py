"""A campaign worker over its memory limit retires between examples and a fresh one goes on:
no crash is recorded, and the counts, the log and shrinking are those of any campaign.
Why workers need this: torch 2.13's compiled autograd leaks every captured backward graph
(harness/known_issues/reproducers/ca_captured_graph_leaked.py, run here too)."""

from __future__ import annotations

import json
import linecache
import subprocess
import sys

import pytest

from harness import plain
from harness.results import CampaignResult
from harness.cli import build_parser
from harness.session import parse_size
from harness.known_issues import REPRODUCERS
from harness.records import log_path, read_log
from harness.workers import DEFAULT_MEMORY_LIMIT, resident_bytes

EXAMPLES = 6


def test_a_worker_over_its_memory_limit_retires_and_a_fresh_one_goes_on(tmp_path):
    out, summary_file = tmp_path / "campaign", tmp_path / "summary.json"
    # 1 MiB: every worker is over it at once, so each retires after the one example it must check.
    # (Each generation's first example is Hypothesis' simplest, which has no backward: a seeded
    # formula fault would show nothing here, so no fault is seeded.)
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--workers", "1",
                           "--max-examples", str(EXAMPLES), "--worker-memory", "1MiB", "--budget", "150s",
                           "--out", str(out), "--json", str(summary_file)],
                          check=False, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]  # no failure, no crash, no worker left behind
    records = list(read_log(log_path(out)))
    summary = json.loads(summary_file.read_text())
    examples = [r for r in records if r["kind"] == "example"]
    # one example per generation; the last one ends at max-examples, not by retiring
    assert [r["worker"] for r in examples] == [f"w0.{g}" for g in range(EXAMPLES)]
    retired = [r for r in records if r["kind"] == "retired"]
    assert [r["worker"] for r in retired] == [f"w0.{g}" for g in range(EXAMPLES - 1)]
    assert all(r["examples"] == 1 and r["resident_bytes"] > r["limit_bytes"] == 2**20 for r in retired)
    assert not [r for r in records if r["kind"] == "crash"] and not summary["failures"]
    # the counts are the log's
    rebuilt = CampaignResult.from_records(records)
    assert summary["examples"] == rebuilt.examples == EXAMPLES
    # the retirements are counted, and the summary and the report say so
    assert summary["worker_retirements"] == rebuilt.retirements == EXAMPLES - 1
    assert f"worker retirements: {EXAMPLES - 1} (" in done.stdout
    assert f"| worker retirements | {EXAMPLES - 1} (" in (out / "report.md").read_text()
    assert summary["paths"] == rebuilt.as_json()["paths"]
    eager = summary["paths"]["eager"]
    assert eager["checked"] + eager["stopped_by_known"] + sum(eager["unsupported"].values()) == EXAMPLES


def test_worker_memory_sizes_and_default(monkeypatch):
    assert [parse_size(t) for t in ("4GiB", "512MiB", "1.5G", "2k", "1000", "0")] == [
        4 * 2**30, 512 * 2**20, 3 * 2**29, 2048, 1000, 0]
    with pytest.raises(Exception, match="'lots' is not a size"):
        parse_size("lots")
    assert build_parser().parse_args(["fuzz"]).worker_memory is None  # run_parallel's default then
    monkeypatch.setenv("HARNESS_WORKER_MEMORY", "2GiB")
    assert build_parser().parse_args(["fuzz"]).worker_memory == 2 * 2**30
    assert build_parser().parse_args(["fuzz", "--worker-memory", "1G"]).worker_memory == 2**30
    assert DEFAULT_MEMORY_LIMIT == 4 * 2**30
    assert 10 * 2**20 < resident_bytes() < 64 * 2**30  # this process, torch imported


def test_the_compiled_autograd_leak_reproducer_runs():
    """It reports the leak ("present", exit 1) or its fix (exit 0); anything else is a broken reproducer."""
    done = subprocess.run([sys.executable, str(REPRODUCERS / "ca_captured_graph_leaked.py"), "30"],
                          check=False, capture_output=True, text=True, timeout=300)
    assert (done.returncode, "REPRODUCED" in done.stdout) in ((1, True), (0, False)), done.stdout + done.stderr


def test_plain_sources_kept_in_linecache_are_bounded():
    """Every example writes new plain-style sources; linecache must not keep them all."""
    def registered():
        return [name for name in linecache.cache if name.startswith("<plain ")]

    for i in range(plain.SOURCES_KEPT + 50):
        plain.compile_function(f"class F0:\n    value = {i}\n", "F0")
    assert len(registered()) <= plain.SOURCES_KEPT
    latest = plain.compile_function("class F0:\n    def method(self):\n        return 1\n", "F0")
    assert linecache.getline(latest.method.__code__.co_filename, 2).strip() == "def method(self):"
