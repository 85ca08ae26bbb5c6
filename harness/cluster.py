"""Campaigns beyond one machine, on existing engines rather than a scheduler of our own.

Shared state is Hypothesis' own example database: a folder on one machine, Redis
(`--database redis://host:port`) so that a failure found on any machine is replayed first
everywhere, or a GitHub Actions artifact (`--database github:OWNER/REPO/ARTIFACT`, read-only:
the nightly workflow carries its database from night to night that way). Scheduling is Ray (`fuzz --cluster ADDRESS`): one task per node, each running an
ordinary `python -m harness fuzz` in a subprocess on its node, so the process-level crash
isolation of `--workers` stays inside every shard. Each shard's examples.jsonl and reproducers
come back; the counts are rebuilt from the logs and merged with `CampaignResult.merge`.

Both need the optional extra `cluster` (pip install -e '.[cluster]'): `redis` and `ray`.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.records import LOG_NAME, read_log

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


def _run_shard(index: int, fuzz_argv: list[str]) -> dict[str, Any]:
    """One shard on whatever node Ray put it: an ordinary fuzz campaign in a subprocess.

    Returns the text of what it wrote (its examples.jsonl and reproducers), which lives on
    that node, and the tail of its output when it wrote no log."""
    import socket

    with tempfile.TemporaryDirectory(prefix=f"harness-shard-{index}-") as tmp:
        out = Path(tmp) / "campaign"
        done = subprocess.run([sys.executable, "-m", "harness", "fuzz", *fuzz_argv, "--out", str(out)],
                              capture_output=True, text=True)
        log = out / LOG_NAME
        if not log.exists():
            return {"index": index, "node": socket.gethostname(), "error":
                    f"exit status {done.returncode}: {(done.stderr or done.stdout).strip()[-2000:]}"}
        files = {p.name: p.read_text() for p in out.glob("*.py")}
        return {"index": index, "node": socket.gethostname(), "log": log.read_text(), "files": files}


def run_on_ray(address: str, fuzz_argv: list[str], out_dir: str | Path, shards: int | None = None):
    """Run campaign shards as Ray tasks (one per alive node unless `shards` says) and merge them.

    `fuzz_argv` is the fuzz command line each shard runs (budget, paths, workers, database...),
    without --out/--cluster. Each shard's log and reproducers come back under
    out_dir/shard-<i>/; the merged result has the wall time of the whole run."""
    from harness.campaign import CampaignResult

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
        task = ray.remote(num_cpus=1, max_retries=0)(_run_shard)
        # one shard per node, round robin; a shard's own --workers use the node's other cores
        futures = [task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=True))
                   .remote(i, fuzz_argv) for i in range(count)]
        outcomes = ray.get(futures)
    finally:
        ray.shutdown()
    merged, errors, fuzz_seconds = None, [], 0.0
    for shard in sorted(outcomes, key=lambda s: s["index"]):
        if "error" in shard:
            errors.append(f"shard {shard['index']} on {shard['node']}: {shard['error']}")
            continue
        where = Path(out_dir) / f"shard-{shard['index']}"
        where.mkdir(parents=True, exist_ok=True)
        (where / LOG_NAME).write_text(shard["log"])
        for name, text in shard["files"].items():
            (where / name).write_text(text)
        part = CampaignResult.from_records(read_log(where / LOG_NAME))
        for failure in part.failures.values():
            if failure.reproducer:
                failure.reproducer = str(where / Path(failure.reproducer).name)
        fuzz_seconds = max(fuzz_seconds, part.fuzz_seconds)
        if merged is None:
            merged = part
        else:
            merged.merge(part)
    if merged is None:
        raise ClusterError("every shard failed: " + "; ".join(errors))
    # the shards ran side by side: the merged rate is over the wall time, not the sum
    merged.seconds, merged.fuzz_seconds = time.monotonic() - started, fuzz_seconds
    return merged, errors
