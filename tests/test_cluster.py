"""Campaigns beyond one machine, on real engines: Hypothesis' Redis example database on a
real redis-server (Debian's package; `.ci/run` installs it), and Ray shards on a real local
Ray cluster (the `cluster` extra)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.campaign import fuzz
from harness.results import CampaignResult
from harness.cluster import ClusterError, example_database
from harness.records import log_path, read_log
from harness.replay import replay_first
from harness.report import load
from harness.selfeval import subprocess_env

needs_redis = pytest.mark.skipif(
    shutil.which("redis-server") is None or importlib.util.find_spec("redis") is None,
    reason="needs Debian's redis-server and the redis client (apt-get install redis-server; "
           "pip install -e '.[cluster]'; .ci/run does both)")


# redis_url: a real redis-server of our own (tests/conftest.py)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_redis
def test_a_failure_found_by_one_campaign_is_replayed_first_by_the_next(redis_url, seeded_path):
    first = CampaignResult([seeded_path.name], "cpu")
    fuzz([seeded_path], until=time.perf_counter() + 240, device="cpu", database=example_database(redis_url),
         lifetimes=False, on_record=first.add_record, known=set(), until_failure=True)
    (cause,) = first.failures
    assert seeded_path.bug(first.failures[cause].spec)

    # another campaign (another client, as on another machine), with nothing known, replays it
    # first: one example, the failure, although the bug is rare in generated examples
    second = CampaignResult([seeded_path.name], "cpu")
    known: set[str] = set()
    replay_first([], [seeded_path], "cpu", example_database(redis_url), False, until=time.perf_counter() + 120,
                 on_record=second.add_record, known=known)
    assert second.examples == 1 and set(second.failures) == known == {cause}
    assert second.replays == {cause: "still fails"}


@needs_redis
def test_fuzz_takes_a_redis_database_on_the_command_line(redis_url, tmp_path):
    out = tmp_path / "campaign"
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--budget", "20s",
                           "--workers", "0", "--database", redis_url, "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (out / "examples-db").exists()  # the examples went to Redis
    assert CampaignResult.from_records(read_log(log_path(out))).examples > 0


def fuzz_cli(out, database, *, fault: str | None, max_examples: int):
    """One `fuzz --workers 2` campaign as the README's "Beyond one machine" runs it (a seeded fault in
    every process, or none): its exit status, JSON summary and records."""
    env = subprocess_env(fault) if fault else None
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--workers", "2",
                           "--budget", "40s", "--max-examples", str(max_examples), "--database", database,
                           "--out", str(out), "--json", str(out) + ".json"],
                          capture_output=True, text=True, timeout=300, env=env, check=False)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "summary written to" in done.stdout, (done.stdout + done.stderr)[-3000:]
    return done, json.loads(Path(str(out) + ".json").read_text()), list(read_log(log_path(out)))


@pytest.mark.parametrize("backend", ["folder", pytest.param("redis", marks=needs_redis)])
def test_campaigns_sharing_a_database_replay_its_failures_first_and_never_crash(backend, tmp_path, request):
    """The README's flow: campaigns sharing a database, each with --workers 2. The first finds the
    seeded fault's failures; the second replays every one of them first (they still fail); the
    third, with the fault gone, replays them and says they did not reproduce, and exits 0. Before
    harness.replay the second died in Hypothesis' engine ("Failed on the first call but did not on a
    subsequent one") with no summary, and with two workers even the first could."""
    database = request.getfixturevalue("redis_url") if backend == "redis" else str(tmp_path / "shared-db")
    done, first, _ = fuzz_cli(tmp_path / "first", database, fault="wrong_backward", max_examples=60)
    assert done.returncode == 1 and first["failures"]
    causes = {f["signature"] for f in first["failures"]}
    # (a worker that starts late replays what its sibling already found and saved: its own campaign's)
    assert set(first["replayed"]) <= causes, first["replayed"]

    done, second, records = fuzz_cli(tmp_path / "second", database, fault="wrong_backward", max_examples=20)
    assert done.returncode == 1
    # every cause of the first is replayed first and still fails; so does any other failure the first
    # saved to the database (one Hypothesis met while shrinking, say: it keeps every failing example)
    assert causes <= set(second["replayed"]), second["replayed"]
    assert set(second["replayed"].values()) == {"still fails"}, second["replayed"]
    assert {(f["signature"], f["replay"]) for f in second["failures"]} >= {(c, "still fails") for c in causes}
    assert "replayed first: " in done.stdout and second["replay_seconds"] > 0
    # first: the first worker's first examples are the replayed ones, and fuzzing went on after them
    mine = [r for r in records if r["kind"] == "example" and r["worker"] == "w0.0"]
    replayed = [r.get("replayed", False) for r in mine]
    assert replayed[:second["replay_examples"]] == [True] * second["replay_examples"] and not any(
        replayed[second["replay_examples"]:])
    assert second["examples"] > second["replay_examples"] > 0

    done, third, _ = fuzz_cli(tmp_path / "third", database, fault=None, max_examples=20)
    assert done.returncode == 0 and not third["failures"], done.stdout[-3000:]
    # (the second may have found and saved a cause of its own: it is replayed too)
    assert causes <= set(third["replayed"]) and set(third["replayed"].values()) == {"did not reproduce"}
    assert "did not reproduce: " in done.stdout


@pytest.mark.skipif(importlib.util.find_spec("redis") is None, reason="needs the redis client (the cluster extra)")
def test_an_unreachable_redis_is_one_clear_sentence(tmp_path):
    url = f"redis://127.0.0.1:{free_port()}/0"  # nobody listens there
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--budget", "20s",
                           "--database", url, "--out", str(tmp_path / "c")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"--database {url}: no Redis server answers there" in done.stderr


@pytest.fixture
def ray_cluster():
    """A real local Ray cluster of two nodes on this machine (`ray start --head`, then `ray start
    --address`), one CPU each; stopped after."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[cluster]'; .ci/run does)")
    ray = Path(sys.executable).with_name("ray")
    port = free_port()
    env_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # its sockets' paths must stay under 108 bytes
    try:
        for role in (["--head", "--port", str(port), "--include-dashboard=false", f"--temp-dir={env_dir}"],
                     ["--address", f"127.0.0.1:{port}"]):
            started = subprocess.run([str(ray), "start", *role, "--num-cpus", "1", "--disable-usage-stats"],
                                     capture_output=True, text=True, timeout=300, check=False)
            assert started.returncode == 0, started.stderr[-2000:]
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(ray), "stop", "--force"], capture_output=True, timeout=300, check=False)
        shutil.rmtree(env_dir, ignore_errors=True)


def shard_campaign(index: int) -> tuple[int, Path] | None:
    """The process id of Ray shard `index`'s campaign (`fuzz ... --shard INDEX --out DIR`), wherever its
    node put it on this machine, and its log; None before it started."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode().split("\0")
        except OSError:
            continue
        if "fuzz" in argv and "--shard" in argv and argv[argv.index("--shard") + 1] == str(index):
            return int(cmdline.parent.name), Path(argv[argv.index("--out") + 1]) / "examples.jsonl"
    return None


def examples_logged(log: Path) -> int:
    return sum(r["kind"] == "example" for r in read_log(log)) if log.exists() else 0


def test_ray_shards_on_two_nodes_stream_their_logs_and_a_killed_shard_loses_nothing(ray_cluster, tmp_path):
    """Two shards on two Ray nodes. Shard 1's task is killed halfway (as with its node): the
    campaign finishes with shard 0, says that shard 1 was lost, and counts every example shard 1
    had checked, which it streamed to the driver as it wrote them (its log, on its node, is gone
    with it)."""
    from harness.cluster import STREAM_S

    out, summary = tmp_path / "campaign", tmp_path / "summary.json"
    campaign = subprocess.Popen([sys.executable, "-m", "harness", "fuzz", "--cluster", ray_cluster, "--shards", "2",
                                 "--paths", "eager", "--budget", "300s", "--max-examples", "300", "--workers", "0",
                                 "--out", str(out), "--json", str(summary)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while (found := shard_campaign(1)) is None or examples_logged(found[1]) < 10:
            assert time.monotonic() < deadline and campaign.poll() is None, campaign.communicate()
            time.sleep(0.05)
        pid, log = found
        os.kill(pid, signal.SIGSTOP)  # it checks nothing more...
        time.sleep(3 * STREAM_S)  # ...and its task sends what it wrote
        checked = examples_logged(log)
        # which is on the driver's disk as it comes, before the campaign ends
        while examples_logged(out / "shard-1" / "examples.jsonl") < checked:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert examples_logged(out / "shard-1" / "examples.jsonl") == checked
        task = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # its parent
        os.kill(task, signal.SIGKILL)  # the Ray worker running shard 1; the kernel kills its campaign too
        stdout, stderr = campaign.communicate(timeout=600)
    finally:
        if campaign.poll() is None:
            campaign.kill()
    assert campaign.returncode == 1, (stdout + stderr)[-3000:]  # a shard was lost
    merged = json.loads(summary.read_text())
    shards = [CampaignResult.from_records(read_log(out / f"shard-{i}" / "examples.jsonl")) for i in (0, 1)]
    assert [s.examples for s in shards] == [300, checked]
    assert merged["examples"] == 300 + checked
    assert merged["paths"]["eager"]["ok"] == sum(s.counts["eager"].ok for s in shards)
    rows = merged["shards"]
    assert [(r["shard"], r["examples"], r["ended"]) for r in rows] == [(0, 300, "exit status 0"), (1, checked, "lost")]
    assert rows[0]["node"] != rows[1]["node"]  # one shard per node
    assert "shard 1 on " in stdout and "was lost" in stdout and f"its {checked} examples" in stdout
    assert (out / "report.html").exists() and "Ray shards" in (out / "report.md").read_text()
    assert "2 shard(s) on Ray" in stdout
    # the merged log is the campaign's: `report` rebuilds the same summary from it
    rebuilt = load(out)
    assert rebuilt.as_json()["paths"] == merged["paths"] and rebuilt.shards == rows
    assert rebuilt.examples == merged["examples"] and rebuilt.seconds == merged["seconds"]
