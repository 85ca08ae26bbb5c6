"""`python -m harness nightly`: the campaign's property under real HypoFuzz, run as a user runs it
(a subprocess, a short budget), its folder read back as `report` reads it; a seeded fault's finding
as a harness reproducer; its coverage restricted to torch's Function modules; bad input."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.records import log_path, read_log

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(importlib.util.find_spec("hypofuzz") is None,
                                reason="needs HypoFuzz (pip install -e '.[fuzz]')")
needs_redis = pytest.mark.skipif(
    shutil.which("redis-server") is None or importlib.util.find_spec("redis") is None,
    reason="needs Debian's redis-server and the redis client (apt-get install redis-server; "
           "pip install -e '.[cluster]')")


def nightly(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    """`python -m harness nightly ARGS` from this checkout (its harness, not an installed one)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "harness", "nightly", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def records(out: Path, kind: str) -> list[dict]:
    return [r for r in read_log(log_path(out)) if r["kind"] == kind]


@pytest.mark.slow
def test_nightly_records_every_example_and_report_rebuilds_from_the_folder(tmp_path):
    out = tmp_path / "night"
    done = nightly("--paths", "eager", "--budget", "40s", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    hypofuzz_output = (out / "hypofuzz.log").read_text()
    assert "using 1 process to fuzz 1 test" in hypofuzz_output  # HypoFuzz collected and fuzzed the property
    examples = records(out, "example")
    assert len(examples) >= 20, f"only {len(examples)} examples in 40 s:\n{hypofuzz_output[-2000:]}"
    assert all(set(r["outcomes"]) == {"eager"} for r in examples)
    # every example but the known bugs' seeds, which nightly checks before HypoFuzz starts (harness/seeds.py)
    assert all(r["worker"].startswith("hypofuzz-") for r in examples if "seed" not in r)
    assert any(r["worker"].startswith("hypofuzz-") for r in examples)
    assert len({r["hash"] for r in examples}) == len(examples)  # HypoFuzz's stability reruns are not recounted
    assert sum(r["outcomes"]["eager"]["status"] in ("ok", "partly", "failed") for r in examples) >= 20
    (start,) = records(out, "start")
    assert start["engine"] == "hypofuzz" and start["paths"] == ["eager"]
    assert "stopped at the end of the budget" in records(out, "end")[0]["hypofuzz"]
    # HypoFuzz kept examples that reached new branches (its reruns of them drew them again), beside
    # the seeds nightly put there
    from hypofuzz.database import HypofuzzDatabase
    from hypothesis.database import DirectoryBasedExampleDatabase

    from harness.nightly import hypofuzz_key

    seeded = [r for r in examples if "seed" in r and not r["mutant"]]
    corpus = list(HypofuzzDatabase(DirectoryBasedExampleDatabase(out / "examples-db")).corpus.fetch(hypofuzz_key()))
    assert len(corpus) > len(seeded), (len(corpus), len(seeded))

    (out / "report.md").unlink()
    rebuilt = subprocess.run([sys.executable, "-m", "harness", "report", str(out)], cwd=ROOT, capture_output=True,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert f"{len(examples)} examples" in rebuilt.stdout
    assert f"| examples | {len(examples)} (" in (out / "report.md").read_text()


#: what HypoFuzz's hub prints when it ends by itself, having seen no worker with a test left to fuzz
HUB_ENDED = "Found a failing input for every test!"


@pytest.mark.slow
def test_hypofuzz_fuzzes_the_whole_budget_when_its_first_examples_are_slow(tmp_path):
    """HypoFuzz's hub checks a minute after it starts its worker whether it still fuzzes; on compiled
    and dynamo paths the worker's first batch of 100 examples takes longer than that, and the hub
    must not take it for finished (fuzz_target._list_tests_before_each_batch)."""
    out = tmp_path / "night"
    # --keep-fuzzing: a failure found ends nothing (a worker stops at its first raise, then the hub);
    # --no-seeds: HypoFuzz gets all of the budget, past the hub's first check
    done = nightly("--paths", "eager,compiled,dynamo", "--budget", "90s", "--out", str(out), "--keep-fuzzing",
                   "--no-seeds", timeout=300)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]  # 1: an unknown failure found
    hypofuzz_output = (out / "hypofuzz.log").read_text()
    assert HUB_ENDED not in hypofuzz_output, hypofuzz_output[-3000:]
    assert records(out, "end")[0]["hypofuzz"] == "stopped at the end of the budget"
    (start,) = records(out, "start")
    fuzzed = [r["t"] - start["t"] for r in records(out, "example")]
    assert fuzzed and max(fuzzed) > 70, fuzzed  # examples checked after the hub's first check too


@pytest.mark.slow
def test_hypofuzz_replays_the_known_bugs_seeds_first(tmp_path):
    """The seeds nightly puts into HypoFuzz's corpus are the first examples a HypoFuzz worker runs
    (here nothing was checked before it, so the property records each as HypoFuzz runs it)."""
    import time

    from harness.engine import drawing
    from harness.nightly import NightlyConfig, run_hypofuzz, seed_hypofuzz_corpus
    from harness.records import spec_hash
    from harness.replay import decode
    from harness.seeds import campaign_seeds
    from harness.selection import campaign_paths

    config = NightlyConfig(paths="eager", device="cpu", out=str(tmp_path), database=str(tmp_path / "db"))
    paths, _ = campaign_paths("eager", "cpu")
    seeds = campaign_seeds(paths, drawing(paths))
    assert seeds, "no seed for eager in harness/known_issues/seeds.json"
    assert seed_hypofuzz_corpus(paths, config.example_database()) == len(seeds)
    assert run_hypofuzz(config, 1, time.perf_counter() + 30) is None  # stopped by the end given, not by itself
    fuzzed = [r["hash"] for r in records(tmp_path, "example")]
    assert len(fuzzed) > len(seeds), (tmp_path / "hypofuzz.log").read_text()[-3000:]
    assert set(fuzzed[:len(seeds)]) == {spec_hash(decode(value, "cpu", drawing(paths))) for _, value in seeds}


#: a Function keeps its inputs alive (the lifetime oracle sees it on eager; float64 gradcheck cannot,
#: so the first failure, which ends HypoFuzz's fuzzing of the property, is a path's and has a script)
FAULT = "leak_input"


@pytest.mark.slow
@needs_redis
def test_a_seeded_fault_found_under_hypofuzz_is_a_harness_reproducer_and_shared_in_redis(tmp_path, redis_url, fault):
    from harness import paths
    from harness.check import check
    from harness.cluster import example_database
    from harness.replay import shared_failures
    from harness.selfeval import subprocess_env
    from harness.spec import GraphSpec

    out = tmp_path / "night"
    # (without the seeds, checked before HypoFuzz starts: they would find the fault first, and HypoFuzz,
    # told only of causes new to the database, would not shrink it)
    done = nightly("--paths", "eager", "--budget", "60s", "--out", str(out), "--database", redis_url, "--no-seeds",
                   env=subprocess_env(FAULT))
    assert done.returncode == 1, done.stdout + done.stderr  # an unknown failure
    found = records(out, "reproducer") + [r for r in records(out, "shrunk") if r["reproducer"]]
    assert found, done.stdout + (out / "hypofuzz.log").read_text()[-3000:]
    latest = found[-1]
    script = Path(latest["reproducer"])
    assert script.parent == out and script.exists() and script.name.startswith("failure_")
    assert "lifetime" in latest["cause"] and "eager" in script.read_text()
    # the reproducer's spec (the smallest seen) fails with the fault and passes without it
    shrunk = [r for r in records(out, "shrunk") if r["cause"] == latest["cause"]]
    failing = [r for r in records(out, "example") if r.get("spec") and latest["cause"] in json.dumps(r["outcomes"])]
    spec = GraphSpec.from_json((shrunk or failing)[-1]["spec"])
    assert not check(spec, [paths.get("eager")], "cpu").failed
    fault(FAULT)
    assert check(spec, [paths.get("eager")], "cpu").failed
    # shared: the harness's fuzz campaigns on this database replay it first, and HypoFuzz keeps its own
    saved = shared_failures(example_database(redis_url))
    assert any(latest["cause"] in causes for _, causes in saved), saved
    hypofuzz_output = (out / "hypofuzz.log").read_text()
    assert "AttributeError" not in hypofuzz_output, hypofuzz_output[-3000:]  # its worker shrank, saved, lived on
    import redis

    keys = redis.Redis.from_url(redis_url).keys()
    # (HypoFuzz keeps a failure's choices under the test's own key, as Hypothesis does, beside its observation)
    assert any(b".hypofuzz.failures.shrunk." in k for k in keys), f"HypoFuzz saved no shrunk failure in Redis: {keys}"
    assert "failure" in (out / "report.md").read_text().lower()


def test_hypofuzz_keeps_the_property_under_the_key_nightly_puts_the_seeds_under(tmp_path):
    """HypoFuzz's own collection of the property, as nightly runs it (in a process of its own, as its
    hub collects), gives the database key hypofuzz_key computes: the seeds' corpus key."""
    from harness.nightly import CONFIG_ENV, NightlyConfig, hypofuzz_command, hypofuzz_key

    config = NightlyConfig(paths="eager", device="cpu", out=str(tmp_path), database=str(tmp_path / "db"))
    command = hypofuzz_command(1, tmp_path)
    pytest_args = command[command.index("--") + 1:]
    collect = ("import sys; from hypofuzz.collection import collect_tests; "
               "print([(t.nodeid, t.database_key.hex()) for t in collect_tests(sys.argv[1:]).fuzz_targets])")
    env = {**os.environ, CONFIG_ENV: str(config.write()), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", collect, *pytest_args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    collected = done.stdout.strip().splitlines()[-1]
    assert collected == repr([("harness/fuzz_target.py::test_campaign_property", hypofuzz_key().hex())])


def test_hypofuzz_traces_only_the_torch_modules_that_handle_functions(monkeypatch):
    """The property's coverage (what guides HypoFuzz) is torch's Function modules' lines, no others."""
    import hypofuzz.coverage
    import hypofuzz.provider
    import torch

    from harness import fuzz_target
    from harness.torch_coverage import function_module_files

    monkeypatch.setattr(hypofuzz.coverage, "should_trace", hypofuzz.coverage.should_trace)
    monkeypatch.setattr(hypofuzz.provider, "CoverageCollector", hypofuzz.provider.CoverageCollector)
    fuzz_target._trace_function_modules_only()

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = torch.ones(3, requires_grad=True)
    with hypofuzz.provider.CoverageCollector() as collector:
        Double.apply(x).sum().backward()
    files = {b.start.filename for b in collector.branches} | {b.end.filename for b in collector.branches}
    assert files, "no branch traced in torch/autograd/function.py"
    assert files <= function_module_files(), files - function_module_files()
    assert str(Path(torch.__file__).parent / "autograd" / "function.py") in files


def test_bad_input_is_one_sentence_with_the_fix(tmp_path, monkeypatch):
    from harness import cli, nightly as nightly_module

    with pytest.raises(SystemExit, match=r"--database http://example.org is not a redis:// .* or a folder"):
        cli.main(["nightly", "--paths", "eager", "--out", str(tmp_path / "a"), "--database", "http://example.org"])
    with pytest.raises(SystemExit, match=r"--workers 0: HypoFuzz needs 1 worker process or more"):
        cli.main(["nightly", "--paths", "eager", "--out", str(tmp_path / "b"), "--workers", "0"])
    with pytest.raises(SystemExit, match=r"unknown path|nosuchpath"):
        cli.main(["nightly", "--paths", "nosuchpath", "--out", str(tmp_path / "c")])
    # a Python without HypoFuzz (as find_spec reports it there)
    monkeypatch.setattr(nightly_module.importlib.util, "find_spec",
                        lambda name: None if name == "hypofuzz" else importlib.util.find_spec(name))
    with pytest.raises(SystemExit, match=r"not installed .* install it with pip install -e '\.\[fuzz\]'"):
        cli.main(["nightly", "--paths", "eager", "--out", str(tmp_path / "d")])
    assert not any((tmp_path / d).exists() for d in "abcd")  # nothing half made


@pytest.mark.skipif(importlib.util.find_spec("redis") is None, reason="needs the redis client (the cluster extra)")
def test_an_unreachable_redis_is_one_sentence(tmp_path):
    from harness import cli

    with pytest.raises(SystemExit, match=r"no Redis server answers there .* start one \(redis-server --port PORT\)"):
        cli.main(["nightly", "--paths", "eager", "--out", str(tmp_path / "n"), "--database", "redis://127.0.0.1:1/0"])


def leaking_spec():
    """One Function that saves its input: under leak_input, a lifetime failure on eager."""
    from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

    return GraphSpec(leaves=(LeafSpec(),), functions=(FunctionSpec(
        args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "sin"),)),), save=("inputs",)),))


def test_the_property_raises_for_a_new_cause_only_and_writes_every_causes_reproducer(tmp_path, fault):
    """In-process (no HypoFuzz): a cause saved in the database before is counted, with its
    reproducer, and does not raise (a raise ends HypoFuzz's fuzzing in that worker); a new one
    raises, with its reproducer, and is saved for `fuzz` campaigns to replay first."""
    from hypothesis import Phase, given, settings, strategies as st

    from harness import paths
    from harness.engine import CauseDatabase, check_example, graph_test_key
    from harness.fuzz_target import UnknownFailure, _Property
    from harness.nightly import NightlyConfig
    from harness.records import record_causes
    from harness.replay import shared_failures

    fault(FAULT)
    spec = leaking_spec()
    (cause,) = record_causes(check_example(spec, [paths.get("eager")], "cpu", True, generate_ms=0.0))
    assert "lifetime" in cause

    seen_before = tmp_path / "seen-before"
    config = NightlyConfig(paths="eager", device="cpu", out=str(seen_before), database=str(seen_before / "db"))
    database = config.example_database()
    CauseDatabase(database, [cause], unshrunk=True, failures_first=True).save(graph_test_key(), b"saved before")
    _Property(config, database, graph_test_key()).check(spec)  # no raise
    (example,) = records(seen_before, "example")
    assert example["outcomes"]["eager"]["status"] == "failed"
    (reproducer,) = records(seen_before, "reproducer")
    assert reproducer["cause"] == cause and Path(reproducer["reproducer"]).exists()

    new = tmp_path / "new"
    config = NightlyConfig(paths="eager", device="cpu", out=str(new), database=str(new / "db"))
    database = config.example_database()
    prop = _Property(config, database, graph_test_key())

    @settings(database=None, phases=[Phase.generate], max_examples=1)
    @given(st.just(spec))
    def fuzzed(s):
        prop.check(s)

    with pytest.raises(UnknownFailure, match="reproducer: .*failure_"):
        fuzzed()
    assert [r["cause"] for r in records(new, "reproducer")] == [cause]
    assert len(records(new, "example")) == 1  # Hypothesis' replay of the failure is a shrinking candidate
    assert any(cause in causes for _, causes in shared_failures(database))


def test_keep_fuzzing_records_and_saves_a_new_cause_without_raising(tmp_path, fault):
    from hypothesis import Phase, given, settings, strategies as st

    from harness.engine import graph_test_key
    from harness.fuzz_target import _Property
    from harness.nightly import NightlyConfig
    from harness.replay import shared_failures

    fault(FAULT)
    config = NightlyConfig(paths="eager", device="cpu", out=str(tmp_path), database=str(tmp_path / "db"),
                           keep_fuzzing=True)
    database = config.example_database()
    prop = _Property(config, database, graph_test_key())

    @settings(database=None, phases=[Phase.generate], max_examples=1)
    @given(st.just(leaking_spec()))
    def fuzzed(s):
        prop.check(s)

    fuzzed()  # no raise: HypoFuzz would go on fuzzing
    (reproducer,) = records(tmp_path, "reproducer")
    assert Path(reproducer["reproducer"]).exists()
    assert any(reproducer["cause"] in causes for _, causes in shared_failures(database))


def test_how_hypofuzz_ended_says_when_it_never_fuzzed_or_a_worker_died(tmp_path):
    from harness.nightly import how_it_ended

    output = tmp_path / "hypofuzz.log"
    output.write_text("collecting tests... done\nusing 1 process to fuzz 1 test\nProcess Process-2:\n"
                      "Traceback (most recent call last):\n  File \"hypofuzz.py\", line 352, in run_one\n"
                      "AttributeError: 'ConjectureResult' object has no attribute 'slice_comments'\n"
                      "Found a failing input for every test!\n")
    how, error = how_it_ended(1, output)
    assert "a worker died (AttributeError: 'ConjectureResult'" in how and str(output) in error
    # a worker idle after its failure dies when the hub ends: no error
    output.write_text("collecting tests... done\nusing 1 process to fuzz 1 test\nProcess Process-2:\n"
                      "Traceback (most recent call last):\n  File \"managers.py\", line 821, in _callmethod\n"
                      "ConnectionResetError: [Errno 104] Connection reset by peer\n"
                      "Found a failing input for every test!\n")
    assert how_it_ended(1, output) == (how_it_ended(1, output)[0], None)
    assert "every worker found a failure" in how_it_ended(1, output)[0]
    output.write_text("Error: No property-based tests were collected. pytest args: ()\n")
    how, error = how_it_ended(2, output)
    assert "without fuzzing (exit status 2: Error: No property-based tests were collected" in error
    assert how_it_ended(None, output) == ("stopped at the end of the budget", None)
