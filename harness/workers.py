"""Campaigns in worker processes: parallel, and isolated from crashes and hangs.

Each worker is `python -m harness.workers CONFIG` running `run_campaign`. Before each
example it writes the spec to its heartbeat file, and every half second its running
result. If a worker dies (a segfault in torch, say) or stops making progress, the parent
records the example it was on as a failure, writes its reproducer, and starts a fresh
worker for the remaining budget; the examples the worker had finished still count.
Workers share one Hypothesis example database when `--database` is given.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.campaign import CampaignResult, Failure
from harness.spec import GraphSpec

POLL_S = 0.2


@dataclass
class _Worker:
    index: int
    process: subprocess.Popen
    heartbeat: Path
    partial: Path
    generation: int
    started: float


def run_parallel(path_names: list[str], *, workers: int, budget_s: float, device: str,
                 out_dir: str | Path, database: str | None, max_examples: int | None,
                 lifetimes: bool, hang_s: float = 300.0) -> CampaignResult:
    out_dir = Path(out_dir)
    scratch = Path(tempfile.mkdtemp(prefix="harness-workers-"))
    total = CampaignResult(path_names, device, lifetimes=lifetimes)
    start = time.perf_counter()
    deadline = start + budget_s
    per_worker_max = None if max_examples is None else -(-max_examples // workers)

    def spawn(index: int, generation: int) -> _Worker:
        heartbeat, partial = scratch / f"w{index}.{generation}.spec", scratch / f"w{index}.{generation}.json"
        # the wall-clock end, not a duration: the worker's start-up (importing torch) is inside the budget
        ends_at = time.time() + max(1.0, deadline - time.perf_counter())
        config = {"paths": path_names, "device": device, "ends_at": ends_at,
                  "out_dir": str(out_dir), "database": database, "max_examples": per_worker_max,
                  "lifetimes": lifetimes, "heartbeat": str(heartbeat), "partial": str(partial),
                  "prefix": f"w{index}.{generation}_"}
        process = subprocess.Popen([sys.executable, "-m", "harness.workers", json.dumps(config)])
        return _Worker(index, process, heartbeat, partial, generation, time.perf_counter())

    running = [spawn(i, 0) for i in range(workers)]
    while running:
        time.sleep(POLL_S)
        for w in list(running):
            code = w.process.poll()
            stalled = code is None and _stalled(w, hang_s)
            if code is None and not stalled:
                continue
            if stalled:
                w.process.kill()
                w.process.wait()
            running.remove(w)
            _collect(total, w)
            if code == 0:
                continue
            what = (f"hang (no progress for {hang_s:.0f} s)" if stalled else
                    f"crash (signal {signal.Signals(-code).name})" if code < 0 else f"crash (exit code {code})")
            _record_crash(total, w, what, path_names, device, out_dir)
            if time.perf_counter() < deadline - 1:
                running.append(spawn(w.index, w.generation + 1))
    total.seconds = time.perf_counter() - start
    return total


def _stalled(w: _Worker, hang_s: float) -> bool:
    last = w.heartbeat.stat().st_mtime if w.heartbeat.exists() else None
    since = time.time() - last if last is not None else time.perf_counter() - w.started
    return since > hang_s


def _collect(total: CampaignResult, w: _Worker) -> None:
    if w.partial.exists():
        total.merge(CampaignResult.from_json(json.loads(w.partial.read_text())))


def _record_crash(total: CampaignResult, w: _Worker, what: str, path_names: list[str], device: str,
                  out_dir: Path) -> None:
    from harness.repro import write_reproducer

    if not w.heartbeat.exists():  # died before its first example: an environment problem
        raise RuntimeError(f"campaign worker {w.index} ended with {what} before checking any example; "
                           f"run `python -m harness fuzz --workers 0` to see its error.")
    spec = GraphSpec.from_json(w.heartbeat.read_text())
    signature = f"{what} while checking paths {','.join(path_names)}"
    total.examples += 1
    if signature in total.failures:
        total.failures[signature].count += 1
        return
    destination = out_dir / f"crash_{len(total.failures)}.py"
    write_reproducer(spec, path_names, device, f"The campaign worker ended with {what} on this spec.",
                     destination)
    total.failures[signature] = Failure(signature, spec, what, 1, str(destination), set(path_names))


def _worker_main(config: dict[str, Any]) -> int:
    from harness import paths
    from harness.campaign import run_campaign

    heartbeat, partial = Path(config["heartbeat"]), Path(config["partial"])
    database = None
    if config["database"]:
        from hypothesis.database import DirectoryBasedExampleDatabase
        database = DirectoryBasedExampleDatabase(config["database"])

    def beat(spec: GraphSpec) -> None:
        heartbeat.write_text(spec.to_json())

    last_save = [0.0]

    def save(result: CampaignResult, every_s: float = 0.5) -> None:
        if time.perf_counter() - last_save[0] < every_s:
            return
        last_save[0] = time.perf_counter()
        tmp = partial.with_suffix(".tmp")
        tmp.write_text(json.dumps(result.as_json()))
        os.replace(tmp, partial)  # atomic: the parent never reads half a file

    result = run_campaign([paths.get(n) for n in config["paths"]],
                          budget_s=max(1.0, config["ends_at"] - time.time()),
                          device=config["device"], out_dir=config["out_dir"], database=database,
                          max_examples=config["max_examples"], lifetimes=config["lifetimes"],
                          on_example=beat, on_progress=save, name_prefix=config["prefix"])
    save(result, every_s=0)  # final, with reproducer paths
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(json.loads(sys.argv[1])))
