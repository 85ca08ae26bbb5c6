"""Campaigns in worker processes: parallel, and isolated from crashes and hangs.

Each worker is `python -m harness.workers CONFIG_FILE`. It sends its records (harness/
records.py) to the parent as JSON lines on a pipe, and before each example a "begin"
record with the spec. The parent alone writes the log, so records from all workers land
whole and in one file. If a worker dies (a segfault in torch, say) or sends nothing for
`hang_s`, the parent records the example it was on as a crash, writes its reproducer and
starts a fresh worker for the remaining budget; the examples the worker had finished are
already recorded.

A fuzzing worker whose resident memory passes `memory_limit` after an example retires: it
sends a "retired" record and exits with RETIRED, and the parent starts a fresh worker (the
next generation, as after a crash) with no crash recorded. A worker always checks one
example before it may retire, so every generation makes progress. Why: torch 2.13's
compiled autograd never frees a captured backward graph (harness/known_issues/reproducers/
ca_captured_graph_leaked.py), about 2.5 MB an example on the compiled path, so a worker
of a nightly campaign would otherwise grow until the machine kills it.

The budget: once there are causes to shrink, the workers are asked (SIGUSR1) to stop
fuzzing where its last shrink_reserve begins (harness.shrink), and stopped for good a little after; then one worker,
started at the beginning so its imports are done, shrinks every new cause over the example
database the workers shared, and is stopped at the budget's end. With nothing to shrink the
workers fuzz on to the end.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.engine import current_choices
from harness.prestart import WAIT_FOR_CONFIG, Prestarted, stop_unused
from harness.records import DATABASE_NAME, OnRecord, Record, crash_cause, now
from harness.results import CampaignResult, Failure
from harness.shrink import shrink_reserve, to_shrink, write_unshrunk_reproducers
from harness.spec import GraphSpec

POLL_S = 0.2
#: a worker still busy this long after it was asked to stop is killed (its example is not counted)
GRACE_S = 3.0
#: what the parent sends a fuzzing worker when its time is up: finish the example, then stop
STOP_SIGNAL = signal.SIGUSR1
#: a fuzzing worker whose resident memory passes this after an example retires (fuzz --worker-memory)
DEFAULT_MEMORY_LIMIT = 4 * 2**30
#: the exit status of a worker that retired: not a crash. 75 is sysexits.h's EX_TEMPFAIL
#: ("a temporary failure; the user is invited to retry"), which no crash of torch exits with.
RETIRED = 75


class WorkerError(RuntimeError):
    """A worker died outside any example (starting up, say): no failure of a graph, but no campaign
    can go on; the command line still writes the summary and reports of what was checked."""


@dataclass
class _Worker:
    name: str
    index: int
    process: subprocess.Popen
    last_seen: float
    current: str | None = None  # the spec of the example it is on (JSON), from its "begin"
    current_choices: str | None = None  # and its choice sequence (base64), to shrink it if the worker dies
    closed: bool = False  # its pipe reached its end: every line it sent is handled
    examples: int = 0  # the examples it checked (their records handled)
    #: a first worker before its "warmed" record: its warm-up is not charged to the budget, so the
    #: budget's end makes it late only hang_s later
    warming: bool = False
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)


def run_parallel(path_names: list[str], *, workers: int, budget_s: float, device: str,
                 out_dir: str | Path, database: str, max_examples: int | None, lifetimes: bool,
                 hang_s: float = 300.0, result: CampaignResult | None = None,
                 on_record: OnRecord | None = None, memory_limit: int = DEFAULT_MEMORY_LIMIT,
                 replay_shared: bool = True, uncharged_s: float = 0.0, seeds: bool = False,
                 twins: bool = False, every_path: bool = False,
                 prestarted: list[Prestarted] | None = None, scratch: Path | None = None) -> CampaignResult:
    """The campaign of run_campaign, in `workers` processes; `database` is a folder, a redis:// URL or
    github:OWNER/REPO[/ARTIFACT] (harness.cluster.example_database). A fuzzing worker retires after
    an example once its resident memory passes `memory_limit` bytes (0: never) and a fresh one
    takes over its share. The first worker replays the saved failures first (harness.replay: the
    campaign's own on resume and, with replay_shared, the shared database's), once, and with `seeds`
    then the known bugs' seeds (harness.seeds; not on resume). The first
    workers' warm-up checks (first-use imports and compile caches) are not charged to the budget:
    the campaign's clock moves on by the longest of them. uncharged_s: what the caller kept out of
    the budget before (the native build), for the summary. prestarted: the first workers, started
    by the caller (harness.prestart) with their logs in `scratch`, waiting for their configs."""
    out_dir = Path(out_dir)
    scratch = scratch if scratch is not None else Path(tempfile.mkdtemp(prefix="harness-workers-"))
    waiting = dict(enumerate(prestarted or []))  # by worker index
    result = result if result is not None else CampaignResult(path_names, device, lifetimes=lifetimes)
    start = time.perf_counter()
    end = start + budget_s

    stop_at = end  # until fuzzing ends for the causes to shrink
    extended = [0.0]  # how far the first workers' warm-ups moved the clock

    def record(rec: Record) -> None:
        nonlocal end, stop_at
        if rec["kind"] == "warmed":
            more = max(0.0, rec["seconds"] - extended[0])  # they warm up side by side
            extended[0] += more
            stop_at = stop_at + more if stop_at == end else stop_at
            end += more
            rec = {**rec, "extends_s": more}
        result.add_record(rec)
        if on_record is not None:
            on_record(rec)

    import torch

    record({"kind": "start", "t": now(), "paths": path_names, "device": device, "torch": torch.__version__,
            "budget_s": budget_s, "lifetimes": lifetimes, "twins": twins, "resumed": bool(result.examples),
            "workers": workers, "uncharged_s": uncharged_s, "every_path": every_path})
    per_worker_max = None if max_examples is None else -(-max_examples // workers)
    earlier = [_failure_config(f) for f in result.failures.values() if f.shrinkable]

    def spawn(index: int, generation: int, mode: str, until: float, **extra: Any) -> _Worker:
        """A worker process (a first one the caller prestarted, else a new one); the shrinker reads its
        work from stdin when fuzzing ends."""
        started = waiting.pop(index, None) if mode == "fuzz" and generation == 0 else None
        read_fd, write_fd = (started.read_fd, started.write_fd) if started else os.pipe()
        name = f"w{index}.{generation}" if mode == "fuzz" else "shrink"
        config = {"mode": mode, "name": name, "paths": path_names, "device": device, "lifetimes": lifetimes,
                  "twins": twins, "every_path": every_path,
                  "database": database, "fd": write_fd, "out_dir": str(out_dir), "memory_limit": memory_limit,
                  # a wall-clock end, not a duration: the worker's start-up (importing torch) is inside the budget;
                  # a budget spent before the worker was given its config leaves it nothing to check
                  "ends_at": time.time() + max(0.0, until - time.perf_counter()), **extra}
        config_file = scratch / f"{name}.json"
        config_file.write_text(json.dumps(config))
        if started:
            started.taken = True
            process = started.process
            assert process.stdin is not None
            try:
                process.stdin.write(f"{config_file}\n")
                process.stdin.close()
            except BrokenPipeError:  # it died starting up: the loop below records its end as any other's
                pass
        else:
            with open(scratch / f"{name}.log", "w") as log:  # its own output, kept apart from the display
                process = subprocess.Popen([sys.executable, "-m", "harness.workers", str(config_file)],
                                           pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=log,
                                           stdin=subprocess.PIPE if mode == "shrink" else subprocess.DEVNULL,
                                           text=True)
            os.close(write_fd)
        worker = _Worker(name, index, process, time.perf_counter(), warming=bool(extra.get("warm_up")))
        threading.Thread(target=_read_lines, args=(read_fd, worker.lines), daemon=True).start()
        return worker

    checked = {i: 0 for i in range(workers)}  # examples of each worker index, over its generations

    def fuzz_config(index: int, generation: int) -> dict[str, Any]:
        return {"known": sorted(result.failures),
                "max_examples": None if per_worker_max is None else per_worker_max - checked[index],
                # saved failures first, once: a later generation's campaign has replayed them
                "replay_first": index == 0 and generation == 0, "replay": earlier, "replay_shared": replay_shared,
                "seeds": seeds and replay_shared and not result.examples,
                # the first workers warm up uncharged; a later one's start-up is the budget's
                "warm_up": generation == 0}

    def share_left(index: int) -> bool:
        return per_worker_max is None or checked[index] < per_worker_max

    running: list[_Worker] = []
    # started now, so its start-up (importing torch, some seconds) is not taken from shrinking
    shrinker = spawn(0, 0, "shrink", end)
    try:
        running += [spawn(i, 0, "fuzz", end, **fuzz_config(i, 0)) for i in range(workers)]
        generations = {i: 0 for i in range(workers)}
        while running:
            causes = len(to_shrink(result))
            if stop_at == end and causes and time.perf_counter() >= end - shrink_reserve(budget_s, causes):
                stop_at = time.perf_counter()
                for w in running:
                    w.process.send_signal(STOP_SIGNAL)
            for w in list(running):
                _drain(w, record)
                code = w.process.poll()
                # a hang is no progress on an example (starting up, importing torch, can be slow)
                stalled = code is None and w.current is not None and time.perf_counter() - w.last_seen > hang_s
                # a first worker still warming up (uncharged) is given hang_s past the budget's end
                late = code is None and time.perf_counter() > min(stop_at + GRACE_S, end) + w.warming * hang_s
                if code is None and not stalled and not late:
                    continue
                if code is None:
                    w.process.kill()
                    code = w.process.wait()
                w.process.wait()
                _drain(w, record, to_the_end=True)
                running.remove(w)
                checked[w.index] += w.examples
                if code != RETIRED:
                    if code in (0, -int(STOP_SIGNAL)) or (late and not stalled):
                        continue  # (a worker still starting up when asked to stop ends by the signal)
                    what = (f"hang (no progress for {hang_s:.0f} s)" if stalled else
                            f"crash (signal {signal.Signals(-code).name})" if code < 0 else f"crash (exit code {code})")
                    _record_crash(w, what, path_names, device, out_dir, scratch, record)
                if time.perf_counter() < stop_at - 1 and share_left(w.index):
                    generations[w.index] += 1
                    g = generations[w.index]
                    running.append(spawn(w.index, g, "fuzz", end, **fuzz_config(w.index, g)))
            time.sleep(POLL_S)

        todo = [_failure_config(f) for f in to_shrink(result)]
        assert shrinker.process.stdin is not None
        # the shrinker's end too: the warm-ups may have moved it since the shrinker started
        shrinker.process.stdin.write(json.dumps({"failures": todo if time.perf_counter() < end - 1 else [],
                                                 "ends_at": time.time() + end - time.perf_counter()}) + "\n")
        shrinker.process.stdin.close()
        if todo:
            while shrinker.process.poll() is None and time.perf_counter() < end:
                _drain(shrinker, record)
                time.sleep(POLL_S)
            if shrinker.process.poll() is None:  # out of budget: the causes not reached stay unshrunk
                shrinker.process.kill()
            shrinker.process.wait()
            _drain(shrinker, record, to_the_end=True)
    finally:  # interrupted: no worker outlives the campaign
        for w in [*running, shrinker]:
            if w.process.poll() is None:
                w.process.kill()
                w.process.wait()
        stop_unused(list(waiting.values()))
    write_unshrunk_reproducers(result, out_dir, record)
    record({"kind": "end", "t": now()})
    return result.finish()


def _read_lines(fd: int, lines: queue.Queue[str | None]) -> None:
    with os.fdopen(fd, encoding="utf-8") as pipe:
        for line in pipe:
            lines.put(line)
    lines.put(None)  # the worker closed its end


def _drain(w: _Worker, record: OnRecord, *, to_the_end: bool = False) -> None:
    """Handle the lines a worker has sent; to_the_end: until it closed the pipe (it has exited)."""
    while not w.closed:
        try:
            line = w.lines.get(timeout=5.0) if to_the_end else w.lines.get_nowait()
        except queue.Empty:
            return
        if line is None:
            w.closed = True
            return
        if not line.endswith("\n"):
            continue  # cut off by the worker's death: never a whole record
        w.last_seen = time.perf_counter()
        rec = json.loads(line)
        w.warming = w.warming and rec["kind"] != "warmed"
        if rec["kind"] == "begin":
            w.current, w.current_choices = rec["spec"], rec.get("choices")
        else:
            if rec["kind"] == "example":
                w.current = None
                w.examples += 1
            record(rec)


def _failure_config(f: Failure) -> dict[str, Any]:
    return {"cause": f.signature, "spec": f.spec.to_json(), "report": f.report, "paths": sorted(f.paths),
            "size_before": f.size_before, "choices": f.choices}


def _record_crash(w: _Worker, what: str, path_names: list[str], device: str, out_dir: Path, scratch: Path,
                  record: OnRecord) -> None:
    from harness.repro import write_reproducer

    if w.current is None:  # not on an example: died starting up, or between examples
        log = (scratch / f"{w.name}.log").read_text()[-2000:]
        raise WorkerError(f"campaign worker {w.name} ended with {what} outside any example; its output:\n{log}\n"
                           f"Run `python -m harness fuzz --workers 0` to see the error in this process.")
    spec = GraphSpec.from_json(w.current)
    cause = crash_cause(what, path_names)
    destination = out_dir / f"crash_{w.name}.py"
    write_reproducer(spec, path_names, device, f"The campaign worker ended with {what} on this spec.",
                     destination)
    record({"kind": "crash", "t": now(), "worker": w.name, "cause": cause, "spec": w.current,
            "choices": w.current_choices, "report": what, "paths": path_names, "reproducer": str(destination)})


def _failures(configs: list[dict[str, Any]]) -> list[Failure]:
    return [Failure(f["cause"], GraphSpec.from_json(f["spec"]), f["report"], paths=set(f["paths"]),
                    size_before=f["size_before"], choices=f.get("choices")) for f in configs]


def _worker_main(config: dict[str, Any]) -> int:
    import torch

    from harness import paths
    from harness.campaign import fuzz, warm_up
    from harness.shrink import shrink_failures
    from harness.cluster import example_database
    from harness.replay import replay_first

    # One thread a worker: the graphs are a few elements each, so intra-op threads would only
    # compete with the other workers (default_workers gives each one a core) and the parent.
    torch.set_num_threads(1)
    pipe = os.fdopen(config["fd"], "w", encoding="utf-8")

    def send(rec: Record) -> None:
        pipe.write(json.dumps(rec) + "\n")
        pipe.flush()

    path_list = [paths.get(n) for n in config["paths"]]
    # a folder, a redis:// URL, or a GitHub artifact read beside the campaign's own folder
    database = example_database(config["database"], Path(config["out_dir"]) / DATABASE_NAME)
    until = time.perf_counter() + config["ends_at"] - time.time()
    device, lifetimes = config["device"], config["lifetimes"]
    if config["mode"] == "shrink":
        warm_up(path_list, device, lifetimes)  # while the others fuzz
        work = json.loads(sys.stdin.readline() or '{"failures": []}')
        until = time.perf_counter() + work.get("ends_at", config["ends_at"]) - time.time()
        shrink_failures(_failures(work["failures"]), path_list, device, database, lifetimes, until=until,
                        out_dir=config["out_dir"], on_record=send)
        return 0
    known = set(config["known"])

    def begin(spec: GraphSpec, choices: str | None = None) -> None:
        """Sent before each example (fuzzed, or replayed with its saved choices): a crash on it is its."""
        send({"kind": "begin", "spec": spec.to_json(), "choices": choices or current_choices()})

    if config.get("warm_up"):  # not charged to the budget: this worker and the parent move their clocks on
        began = time.perf_counter()
        warm_up(path_list, device, lifetimes)
        took = time.perf_counter() - began
        until += took
        send({"kind": "warmed", "t": now(), "worker": config["name"], "seconds": took})
    if config["replay_first"]:
        replay_first(_failures(config["replay"]), path_list, device, database, lifetimes, until=until,
                     on_record=send, known=known, shared=config["replay_shared"], worker=config["name"],
                     on_example=begin, twins=config.get("twins", False))
    if config["replay_first"] and config.get("seeds"):
        from harness.seeds import check_seeds, seeds_until

        check_seeds(path_list, device, database, lifetimes, until=seeds_until(until), on_record=send, known=known,
                    worker=config["name"], on_example=begin, twins=config.get("twins", False))
    stop = [False]
    signal.signal(STOP_SIGNAL, lambda *_: stop.__setitem__(0, True))
    checked = [0]
    retiring: list[int] = []  # the resident bytes that made it retire

    def on_record(rec: Record) -> None:
        send(rec)
        checked[0] += rec["kind"] == "example"

    def should_stop() -> bool:  # asked between examples, never before the first one
        if not retiring and config["memory_limit"] and checked[0]:
            resident = resident_bytes()
            if resident > config["memory_limit"]:
                retiring.append(resident)
        return stop[0] or bool(retiring)

    fuzz(path_list, until=until, device=device, database=database, lifetimes=lifetimes, on_record=on_record,
         known=known, max_examples=config["max_examples"], worker=config["name"], on_example=begin,
         should_stop=should_stop, twins=config.get("twins", False), every_path=config.get("every_path", False))
    if retiring and not stop[0]:
        send({"kind": "retired", "t": now(), "worker": config["name"], "examples": checked[0],
              "resident_bytes": retiring[0], "limit_bytes": config["memory_limit"]})
        return RETIRED
    return 0


def resident_bytes() -> int:
    """This process's resident memory (Linux); elsewhere its peak resident memory."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def _config_of_prestarted() -> dict[str, Any] | None:
    """A worker harness.prestart started: what it will need imported now, side by side with the
    parent's own start-up; then its config, or None where the parent closed stdin without one."""
    import harness.campaign  # noqa: F401 -- torch, torch._dynamo, Hypothesis and the paths with it
    import harness.cluster  # noqa: F401
    import harness.replay  # noqa: F401

    config_file = sys.stdin.readline().strip()
    return json.loads(Path(config_file).read_text()) if config_file else None


if __name__ == "__main__":
    signal.signal(STOP_SIGNAL, signal.SIG_IGN)  # until fuzzing installs its handler
    try:
        config = (_config_of_prestarted() if sys.argv[1] == WAIT_FOR_CONFIG
                  else json.loads(Path(sys.argv[1]).read_text()))
        code = 0 if config is None else _worker_main(config)
    except (BrokenPipeError, KeyboardInterrupt):  # the parent is gone or was interrupted: nothing to add
        code = 1
    # Every record is flushed and the database written: skip the interpreter's teardown, which
    # with torch loaded takes seconds of the budget under load.
    os._exit(code)
