"""Campaigns beyond one machine, on existing engines rather than a scheduler of our own.

Shared state is Hypothesis' own example database: a folder on one machine, Redis
(`--database redis://host:port`) so that a failure found on any machine is replayed first
everywhere, or a GitHub Actions artifact (`--database github:OWNER/REPO/ARTIFACT`, read-only:
the nightly workflow carries its database from night to night that way). Scheduling is Ray (`fuzz --cluster ADDRESS`): one task per node, each running an
ordinary `python -m harness fuzz` in a subprocess on its node, so the process-level crash
isolation of `--workers` stays inside every shard. Each shard streams its examples.jsonl and
reproducers to the driver as it writes them (a shard or node lost mid-campaign keeps what it
checked); the driver writes them one after the other as the campaign's own examples.jsonl, with a
row per shard, and the counts are rebuilt from it as from any campaign's log. Shard 0 alone replays the shared database's failures first (fuzz --shard).

Both need the optional extra `cluster` (pip install -e '.[cluster]'): `redis` and `ray`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.records import LOG_NAME, now, read_log

REDIS_PREFIX = b"autograd-function-harness:"  # keys of our examples in a shared Redis


class ClusterError(Exception):
    """A database or cluster that cannot be used, with the fix in the message."""


#: --database github:OWNER/REPO[/ARTIFACT]: a GitHub Actions artifact holding an example database folder
GITHUB_DATABASE = re.compile(r"^github:(?P<owner>[A-Za-z0-9-]+)/(?P<repo>[A-Za-z0-9._-]+)(?:/(?P<artifact>[^/]+))?$")


def example_database(location: str | None, local: str | Path | None = None) -> Any:
    """Hypothesis' example database for --database: a redis:// URL, github:OWNER/REPO[/ARTIFACT]
    or a folder (None: none).

    A GitHub artifact is read-only (last night's database, uploaded by the nightly workflow), so
    it is read beside the folder `local`, which gets this campaign's writes and is uploaded as
    tonight's artifact: Hypothesis' recommended MultiplexedDatabase(local, ReadOnlyDatabase(
    GitHubArtifactDatabase(...))). Nothing is downloaded until the first read; the download is
    cached beside `local` (in LOCAL/../github-artifact/) and kept for a day. It reads the token
    from GITHUB_TOKEN (Actions sets one; a private repository needs it)."""
    if not location:
        return None
    if location.startswith(("redis://", "rediss://")):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError:
            raise ClusterError(f"--database {location} needs the redis client; install it with "
                               f"pip install -e '.[cluster]'") from None
        client = redis.Redis.from_url(location)
        try:
            client.ping()
        except redis.exceptions.ConnectionError as e:
            raise ClusterError(f"--database {location}: no Redis server answers there ({e}); "
                               f"start one (redis-server --port PORT) or fix the URL") from None
        return RedisExampleDatabase(client, key_prefix=REDIS_PREFIX)
    from hypothesis.database import DirectoryBasedExampleDatabase

    if "://" in location:  # a URL of another scheme would silently become a folder of that name
        raise ClusterError(f"--database {location} is not a redis:// or rediss:// URL; give redis://host:port, "
                           f"github:OWNER/REPO[/ARTIFACT] or a folder")
    if location.startswith("github:"):
        from hypothesis.database import (
            GitHubArtifactDatabase,
            MultiplexedDatabase,
            ReadOnlyDatabase,
        )

        found = GITHUB_DATABASE.match(location)
        if not found:
            raise ClusterError(f"--database {location} is not github:OWNER/REPO or github:OWNER/REPO/ARTIFACT "
                               f"(e.g. github:octo/harness/examples-db-torch213)")
        if local is None:
            raise ClusterError(f"--database {location} is read-only and needs a local folder for this "
                               f"campaign's writes; give fuzz an --out folder")
        local = Path(local)
        artifact = {"artifact_name": found["artifact"]} if found["artifact"] else {}  # else Hypothesis' default
        shared = GitHubArtifactDatabase(found["owner"], found["repo"], path=local.parent / "github-artifact",
                                        **artifact)
        return MultiplexedDatabase(DirectoryBasedExampleDatabase(local), ReadOnlyDatabase(shared))
    return DirectoryBasedExampleDatabase(location)


#: how often a shard sends the driver the records and reproducers it has written since
STREAM_S = 0.25


class ShardLogs:
    """A Ray actor on the driver's node between the shards and the driver: each shard sends what
    it writes as it writes it (every STREAM_S) and the driver takes it from here to its disk as
    often, so a shard or a node lost mid-campaign keeps every example it checked up to its last
    send, and what waits here stays small."""

    def __init__(self) -> None:
        self.waiting: dict[int, dict[str, Any]] = {}

    def add(self, index: int, node: str, lines: list[str], files: dict[str, str]) -> None:
        shard = self.waiting.setdefault(index, {"node": node, "lines": [], "files": {}})
        shard["lines"] += lines
        shard["files"].update(files)

    def take(self) -> dict[int, dict[str, Any]]:
        """What the shards sent since the last take."""
        taken, self.waiting = self.waiting, {}
        return taken


def _write_taken(taken: dict[int, dict[str, Any]], out_dir: Path, nodes: dict[int, str]) -> None:
    """Append what ShardLogs.take() returned to out_dir/shard-<i>/ (its log and reproducers)."""
    for index, shard in taken.items():
        nodes[index] = shard["node"]
        where = out_dir / f"shard-{index}"
        where.mkdir(parents=True, exist_ok=True)
        with open(where / LOG_NAME, "a", encoding="utf-8") as log:
            log.writelines(shard["lines"])
        for name, text in shard["files"].items():
            (where / name).write_text(text)


#: `python -c` this, then the arguments of `python -m harness`: the shard's campaign process, which
#: the kernel kills with the Ray task that started it (Linux's PR_SET_PDEATHSIG), as it would be with
#: its node, instead of running on with nobody sending its log
DIE_WITH_PARENT = ("import ctypes, runpy, signal, sys\n"
                   "try:\n    ctypes.CDLL(None).prctl(1, signal.SIGKILL)\nexcept (OSError, AttributeError):\n    pass\n"
                   "sys.argv[0] = 'harness'\nrunpy.run_module('harness', run_name='__main__', alter_sys=True)")


def _run_shard(index: int, fuzz_argv: list[str], logs: Any) -> dict[str, Any]:
    """One shard on whatever node Ray put it: an ordinary fuzz campaign in a subprocess, its log
    and reproducers sent to `logs` (a ShardLogs actor) as they are written. Returns how it ended,
    and the tail of its output when it wrote no log."""
    import socket

    import ray

    node = f"{socket.gethostname()} (node {ray.get_runtime_context().get_node_id()[:8]})"
    with tempfile.TemporaryDirectory(prefix=f"harness-shard-{index}-") as tmp:
        out = Path(tmp) / "campaign"
        output = Path(tmp) / "output.txt"
        with open(output, "w") as sink:
            campaign = subprocess.Popen([sys.executable, "-c", DIE_WITH_PARENT, "fuzz", *fuzz_argv,
                                         "--shard", str(index), "--out", str(out)], stdout=sink,
                                        stderr=subprocess.STDOUT)
        log, sent, files_sent = out / LOG_NAME, 0, {}
        while True:
            ended = campaign.poll() is not None
            lines: list[str] = []
            if log.exists():
                with open(log, encoding="utf-8") as f:
                    f.seek(sent)
                    text = f.read()
                whole = text[:text.rfind("\n") + 1]  # a line still being written waits for the next send
                sent += len(whole.encode())
                lines = whole.splitlines(keepends=True)
            files = {}
            for p in out.glob("*.py"):
                text = p.read_text()
                if files_sent.get(p.name) != text:
                    files[p.name] = files_sent[p.name] = text
            if lines or files:
                ray.get(logs.add.remote(index, node, lines, files))  # acknowledged: the driver holds them
            if ended:
                break
            time.sleep(STREAM_S)
        if not log.exists():
            return {"index": index, "node": node, "error": f"exit status {campaign.returncode}: "
                                                          f"{output.read_text().strip()[-2000:]}"}
        return {"index": index, "node": node, "returncode": campaign.returncode}


def run_on_ray(address: str, fuzz_argv: list[str], out_dir: str | Path, shards: int | None = None):
    """Run campaign shards as Ray tasks (one per alive node unless `shards` says) and merge them.

    `fuzz_argv` is the fuzz command line each shard runs (budget, paths, workers, database...),
    without --out/--cluster. Each shard streams its log and reproducers to the driver as it writes
    them (ShardLogs); they land under out_dir/shard-<i>/ as they come, also for a shard whose task
    or node was lost (its examples up to then count), and at the end one after the other, each record tagged with its
    shard, in out_dir/examples.jsonl. The result, rebuilt from that log, has the wall time of the
    whole run and one row per shard (`shards`: node, examples, failures, how it ended); the errors
    name the shards lost."""
    from harness.results import CampaignResult

    earlier = sorted(Path(out_dir).glob(f"shard-*/{LOG_NAME}"))
    if earlier:
        raise ClusterError(f"{earlier[0]} is there already (an earlier campaign's shard); choose another --out")
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise ClusterError("--cluster needs Ray; install it with pip install -e '.[cluster]'") from None
    started = time.monotonic()
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ClusterError(f"--cluster {address}: no Ray cluster answers there ({str(e).splitlines()[0]}); "
                           f"start one with `ray start --head` and pass its address") from None
    try:
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        count = shards or len(nodes)
        # on the driver's own node, so that losing any other node loses none of what was sent
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        logs = ray.remote(num_cpus=0)(ShardLogs).options(scheduling_strategy=here).remote()
        task = ray.remote(num_cpus=1, max_retries=0)(_run_shard)
        # one shard per node, round robin; a shard's own --workers use the node's other cores
        futures = [task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=True))
                   .remote(i, fuzz_argv, logs) for i in range(count)]
        out_dir = Path(out_dir)
        outcomes: dict[int, dict[str, Any]] = {}
        nodes: dict[int, str] = {}
        running = dict(zip(futures, range(count)))
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=STREAM_S)
            for future in ready:
                i = running.pop(future)
                try:
                    outcomes[i] = ray.get(future)
                except ray.exceptions.RayError as e:  # its task's process or its node died
                    outcomes[i] = {"index": i, "lost": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
            # (a shard's last send is acknowledged before its task returns: the last take has it)
            _write_taken(ray.get(logs.take.remote()), out_dir, nodes)
    finally:
        ray.shutdown()
    errors, rows, records, fuzz_seconds, budget_s = [], [], [], 0.0, 0.0
    for index in range(count):
        outcome = outcomes[index]
        node = outcome.get("node", nodes.get(index, "?"))
        if "error" in outcome:
            errors.append(f"shard {index} on {node}: {outcome['error']}")
            rows.append({"shard": index, "node": node, "examples": 0, "failures": 0, "ended": "failed to start"})
            continue
        where = out_dir / f"shard-{index}"
        mine = list(read_log(where / LOG_NAME)) if (where / LOG_NAME).exists() else []
        for record in mine:  # tagged with their shard; reproducers where they are now
            record["shard"] = index
            if record.get("reproducer"):
                record["reproducer"] = str(where / Path(record["reproducer"]).name)
        part = CampaignResult.from_records(mine)
        if "lost" in outcome:
            errors.append(f"shard {index} on {node} was lost ({outcome['lost']}); its {part.examples} examples "
                          f"up to then are counted")
        rows.append({"shard": index, "node": node, "examples": part.examples, "failures": len(part.failures),
                     "ended": "lost" if "lost" in outcome else f"exit status {outcome['returncode']}"})
        fuzz_seconds, budget_s = max(fuzz_seconds, part.fuzz_seconds), max(budget_s, part.budget_s)
        records += mine
    if not records:
        raise ClusterError("every shard failed: " + "; ".join(errors))
    # the shards ran side by side: the campaign's times are the wall time, not their sum
    records.append({"kind": "shards", "t": now(), "rows": rows, "seconds": round(time.monotonic() - started, 3),
                    "fuzz_seconds": fuzz_seconds, "budget_s": budget_s})
    # the merged log is the shards' logs one after the other: `report` and `diff` read it as any campaign's
    with open(out_dir / LOG_NAME, "w", encoding="utf-8") as log:
        log.writelines(json.dumps(record, sort_keys=True) + "\n" for record in records)
    return CampaignResult.from_records(records), errors
