import argparse
import json
import os
import subprocess
import sys

import pytest

from harness.cli import build_parser, main, parse_duration
from harness.session import WORKER_MEMORY_ENV, add_campaign_options, campaign_argv


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("5m", 300), ("8h", 28800), ("1h30m", 5400), ("45", 45)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


def test_a_shards_command_line_carries_every_campaign_option(monkeypatch):
    """fuzz --cluster gives each Ray shard the campaign's options as a fuzz command line written back
    from the options' own definitions: every one, set away from its default, reads back the same."""
    monkeypatch.delenv(WORKER_MEMORY_ENV, raising=False)
    parser = build_parser()
    chosen = ["--budget", "5m", "--paths", "eager", "--device", "cpu,cuda", "--database", "redis://h:1/0",
              "--max-examples", "40", "--workers", "3", "--hang-timeout", "90s", "--worker-memory", "1.5GiB",
              "--no-lifetimes", "--no-seeds", "--no-twins", "--every-path"]
    args = parser.parse_args(["fuzz", *chosen, "--out", "campaign", "--cluster", "head:6379", "--json", "s.json"])
    options = [a.dest for a in add_campaign_options(argparse.ArgumentParser()) if a.dest != "out"]
    defaults = parser.parse_args(["fuzz"])
    assert all(getattr(args, d) != getattr(defaults, d) for d in options)  # each one would be missed
    back = parser.parse_args(["fuzz", *campaign_argv(args, leave_out=("out",))])
    assert {d: getattr(back, d) for d in options} == {d: getattr(args, d) for d in options}
    assert (back.out, back.cluster, back.json) == (None, None, None)  # the shard's own, not the driver's
    back = parser.parse_args(["fuzz", *campaign_argv(args, budget=290, paths="eager,owned")])
    assert (back.budget, back.paths, back.out) == (290, "eager,owned", "campaign")


def test_fuzz_writes_the_summary(tmp_path, capsys):
    out = tmp_path / "out.json"
    code = main(["fuzz", "--paths", "eager", "--budget", "60s", "--max-examples", "20",
                 "--json", str(out), "--out", str(tmp_path / "failures")])
    summary = json.loads(out.read_text())
    assert code == 0, capsys.readouterr().out
    assert summary["torch"].startswith("2.")
    assert summary["examples"] == 20 and summary["seconds"] > 0
    counts = summary["paths"]["eager"]
    # Every example is exactly one of ok, failed, partly, stopped by a known issue or unsupported;
    # checked = ok + failed (README): partly is counted apart, never as checked
    assert counts["ok"] + counts["failed"] + counts.get("partly", 0) + counts["stopped_by_known"] == 20
    assert counts["unsupported"] == {}
    assert counts["checked"] == counts["ok"] + counts["failed"] > 0
    assert counts["checked_share"] == round(counts["checked"] / 20, 4)
    assert counts["checked_past_known"] <= sum(counts["known"].values())
    assert "examples/s" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["fuzz", "--paths", "eager,bogus"], "unknown path 'bogus'; valid paths: eager"),
    (["fuzz", "--budget", "soon"], "--budget 'soon' is not a duration; use e.g. 90s"),
    (["check", "missing.json"], "cannot read spec file 'missing.json'"),
])
def test_bad_input_is_one_clear_line(argv, message):
    process = subprocess.Popen([sys.executable, "-m", "harness", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode != 0
    assert message in stderr
    assert "Traceback" not in stderr
    # nothing it started outlives it: fuzz's first workers start before its arguments are checked
    # (harness/prestart.py), and bad input stops them
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)


@pytest.mark.valgrind
def test_bench_json_on_a_small_subset(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "-m", "harness", "bench", "--paths", "eager", "--scenarios", "seed",
                           "--phases", "forward", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["torch"].startswith("2.")
    (row,) = report["results"]
    assert {k: row[k] for k in ("scenario", "path", "phase", "inputs")} == {
        "scenario": "seed", "path": "eager", "phase": "forward", "inputs": 13}
    assert row["instructions"] > 10_000
    assert "start-up" in done.stdout


def test_a_campaign_that_checked_nothing_says_so_and_exits_3(tmp_path):
    """A campaign whose budget runs out before its first example does not say "no failures" and
    exit 0: its verdict says nothing was checked, and the exit status is 3."""
    out = tmp_path / "summary.json"
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--budget", "1s",
                           "--out", str(tmp_path / "campaign"), "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    summary = json.loads(out.read_text())
    assert summary["examples"] == 0 and summary["unchecked_paths"] == ["eager"]
    assert done.returncode == 3, done.stdout[-2000:]
    assert "no failures, but nothing checked: no example ran within the budget" in done.stdout


def test_check_of_a_spec_no_selected_path_supports_exits_3(tmp_path):
    """`check SPEC --paths owned` on a traced graph (the native apply cannot be traced): nothing was
    compared, so no "all paths agree" and no exit 0. A path that checks it exits 0 as before."""
    from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

    spec = GraphSpec(shape=(3,), leaves=(LeafSpec(),), backward="backward", trace=True, functions=(
        FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "sin"),)),), save=("inputs",)),))
    spec_file = tmp_path / "traced.json"
    spec_file.write_text(spec.to_json())

    def check(paths: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness", "check", str(spec_file), "--paths", paths],
                              capture_output=True, text=True, timeout=300)
    done = check("owned")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "all paths agree" not in done.stdout
    assert done.stdout.splitlines()[-1] == ("not checked: owned (unsupported: tracing (torch.jit.trace records only "
                                            "the stock Function.apply))"), done.stdout
    done = check("eager")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "all paths agree", done.stdout + done.stderr


def test_the_verdict_names_a_path_that_checked_nothing():
    """Examples ran, but one path only ever said unsupported: the verdict names it."""
    from harness.results import CampaignResult

    result = CampaignResult(["eager", "compiled"], "cpu")
    result.add_record({"kind": "start", "t": 0.0, "paths": ["eager", "compiled"], "device": "cpu",
                       "lifetimes": True})
    result.add_record({"kind": "example", "t": 1.0, "backward": False, "check_ms": 1.0, "generate_ms": 1.0,
                       "gradcheck": "skipped", "features": {}, "spec": None,
                       "outcomes": {"eager": {"status": "ok"},
                                    "compiled": {"status": "unsupported", "reason": "no backward"}}})
    assert result.unchecked_paths() == ["compiled"]
    assert result.verdict().startswith("no failures, but nothing checked on compiled:")
    assert result.summary().endswith(result.verdict())


@pytest.mark.slow
def test_the_native_build_is_not_charged_to_the_budget(tmp_path):
    """On a fresh machine the one-time native build (about 40 s) would eat a 60 s budget, and the
    README's main job check nothing: a fresh native cache leaves the budget to fuzzing."""
    import os

    out = tmp_path / "summary.json"
    env = {**os.environ, "HARNESS_NATIVE_CACHE": str(tmp_path / "fresh-native-cache")}
    # (without the twin-form oracle: what is counted here is the budget left to fuzzing, at the speed
    # of the two paths alone; twins cost about 1.3x per example, docs/twins.md)
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager,owned", "--budget", "15s",
                           "--no-twins", "--out", str(tmp_path / "campaign"), "--json", str(out)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert summary["uncharged_seconds"] > 10  # the build ran in this campaign
    assert summary["paths"]["owned"]["checked"] >= 20, summary["paths"]
    assert "not charged to the budget" in done.stdout
