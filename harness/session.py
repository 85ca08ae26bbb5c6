"""A fuzz session from its start to its exit status, the same for `fuzz`, `coverage`, `nightly`
and `fuzz --cluster`: the campaign folder (new, or resumed), the example database reached once
before anything starts, the budget (where it starts counting, what the reports keep back, what
one-time costs are not charged to it), the warm-up, SIGTERM ending a session as Ctrl-C does, the
summary and reports written whatever the ending, and the exit status.

The options a campaign takes are defined here too (add_campaign_options): the command line
(harness.cli) adds them to its parsers, and a Ray shard's command line is written back from the
same definitions (campaign_argv), so that no option is left behind on the way to a shard.

Nothing here imports torch at module level: `python -m harness --help` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.selection import campaign_paths, on_devices, selected_devices, selected_paths

#: exit statuses, the same for every command that judges (fuzz, coverage, nightly, fuzz --cluster,
#: check, diff): no unknown failure and every path checked something
OK = 0
#: an unknown failure (for fuzz --cluster also: a shard failed or was lost)
FAILED = 1
#: the harness itself failed (replaying or shrinking a cause, checking an example or a seed, a
#: worker dead outside any example, HypoFuzz that never fuzzed): what it was checking then is
#: unknown, so the verdict is incomplete
HARNESS_ERROR = 2
#: no failure, but some path (or the whole campaign) checked nothing
NOTHING_CHECKED = 3
#: Ctrl-C or SIGTERM: the summary and reports hold what was checked; `fuzz --resume` goes on
INTERRUPTED = 130

#: time kept back from the budget for the reports, when it is long enough to spare it
REPORT_S = 5.0
#: what a Ray shard's budget leaves for starting Ray, the shard's process and the merge
CLUSTER_SLACK_S = 10.0

DEVICE_HELP = ("cpu (default), cuda, or cpu,cuda: the same graph on both, the CUDA runs judged "
               "against the CPU's within the error bounds")
DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s?)?$")
SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?$", re.IGNORECASE)
#: the environment's default for fuzz --worker-memory (a nightly job sets it once)
WORKER_MEMORY_ENV = "HARNESS_WORKER_MEMORY"

#: set by a local fuzz campaign: `python -m harness` then exits without the interpreter's teardown
#: (seconds with torch loaded on a busy machine), so the budget includes the exit too
EXIT_AT_ONCE = False


def parse_duration(text: str) -> float:
    """'90s', '5m', '8h', '1h30m' or plain seconds -> seconds."""
    m = DURATION.match(text.strip())
    if not text.strip() or not m or not any(m.groups()):
        raise argparse.ArgumentTypeError(
            f"--budget {text!r} is not a duration; use e.g. 90s, 5m, 8h or 1h30m.")
    h, mins, s = m.groups()
    return int(h or 0) * 3600 + int(mins or 0) * 60 + float(s or 0)


def parse_size(text: str) -> int:
    """'4GiB', '512M', '1.5G' or plain bytes -> bytes (binary units: 1K = 1024)."""
    m = SIZE.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(
            f"--worker-memory {text!r} is not a size; use e.g. 4GiB, 512MiB or 0 (no limit).")
    number, unit = m.groups()
    return int(float(number) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[unit.upper()])


#: the memory each default worker is counted to need: a worker's resident size in a campaign of
#: minutes stays under it (it retires at --worker-memory, 4 GiB by default)
MEMORY_PER_WORKER = 2 * 2**30


def default_workers() -> int:
    """Worker processes for a campaign on this machine: one per core this process may run on (each
    runs torch on one thread, harness.workers), at most one per MEMORY_PER_WORKER of memory, at
    least one. On the 2-core machines here two workers check about twice the examples of one in
    the README's 60 s job (docs/profile.md)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf, or no such name: the cores alone decide
        memory = cores * MEMORY_PER_WORKER
    return max(1, min(cores, memory // MEMORY_PER_WORKER))


def add_campaign_options(parser: argparse.ArgumentParser, *, workers: int | None = None) -> list[argparse.Action]:
    """The options of a campaign on this machine, shared by fuzz and coverage (`workers`: the
    default, default_workers() when None), added to `parser`; returns them (campaign_argv writes
    them back)."""
    if workers is None:
        workers = default_workers()
    added: list[argparse.Action] = []

    def add(*flags: str, **how: Any) -> None:
        added.append(parser.add_argument(*flags, **how))

    add("--budget", type=parse_duration, default=60.0,
        help="wall time for everything, e.g. 90s, 8h (default 60s), but the one-time native "
             "build and the first workers' warm-up (the summary says how long). The reports keep "
             f"min({REPORT_S:g} s, 15%%) of it. Of the rest, once a failure cause is found, "
             "shrinking each new cause and writing and reducing its reproducer get the last 25%%, "
             "or 60 s a cause up to the last 50%% where that is more, each cause an equal part of "
             "what is left when its turn comes; "
             "with nothing to shrink, fuzzing goes on to the end")
    add("--paths", help="comma-separated paths (default: all available here except the "
                        "opt-in torch.func family, func.grad, func.jvp, ... ; docs/func.md)")
    add("--device", default="cpu", help=DEVICE_HELP)
    add("--out", help="campaign folder, new or empty: examples.jsonl, report.md, report.html, "
                      "reproducers and the example database (default: a new "
                      "campaigns/<date>-<time>/)")
    add("--database", help="Hypothesis example database shared between campaigns: a folder, "
                           "or redis://host:port (needs the cluster extra) so failures found on "
                           "any machine replay first everywhere, or github:OWNER/REPO[/ARTIFACT]: "
                           "a GitHub Actions artifact (the nightly workflow's), read-only, beside "
                           "DIR/examples-db which gets the writes (default: DIR/examples-db)")
    add("--max-examples", type=int, help="stop after this many examples")
    add("--workers", type=int, default=workers,
        help=f"worker processes, each isolated from crashes and hangs (default {workers} here: one per "
             "core, at most one per 2 GiB of memory; 0 runs in this process, without isolation)")
    add("--hang-timeout", type=parse_duration, default=300.0,
        help="a worker with no progress for this long is killed and its example "
             "recorded as a hang (default 300s)")
    add("--worker-memory", metavar="SIZE", type=parse_size, default=os.environ.get(WORKER_MEMORY_ENV),
        help="with --workers 1 or more: a worker whose resident memory passes SIZE (e.g. 4GiB, 512MiB; 0: no limit) "
             "retires after its current example and a fresh worker goes on with its share: "
             "no crash is recorded and the counts, log and shrinking are unaffected "
             f"(default 4GiB, or ${WORKER_MEMORY_ENV}). torch 2.13's compiled autograd "
             "leaks every captured backward graph, about 2.5 MB an example on the compiled path")
    add("--no-lifetimes", action="store_true",
        help="skip the lifetime oracle (refcounts and liveness); faster, checks less")
    add("--no-seeds", action="store_true",
        help="do not start from the known torch issues' seeds (harness/seeds.py: by default the "
             "campaign first checks, within 15%% of its budget (SEED_SHARE), a graph per registered "
             "issue on its paths and mutants of them; not with --max-examples, nor on --resume)")
    add("--no-twins", action="store_true",
        help="skip the twin-form oracle (each example's twin with its Functions written in another "
             "form, run on every path: docs/twins.md); faster, checks less")
    add("--every-path", action="store_true",
        help="run every path on every fuzzed example (by default the cheap paths check each example "
             "and a compiling family, one at a time, a share of them: each family about the same "
             "part of the time, harness/split.py); slower on the cheap paths")
    return added

def campaign_argv(args: argparse.Namespace, *, leave_out: tuple[str, ...] = (), **values: Any) -> list[str]:
    """The campaign options of `args` (as add_campaign_options defines them) written back as a fuzz
    command line, each option given `values` instead where it names one (by its dest); an option
    unset (None, a flag off) and those in `leave_out` (dests) are not written."""
    argv: list[str] = []
    for action in add_campaign_options(argparse.ArgumentParser(add_help=False)):
        if action.dest in leave_out:
            continue
        value = values[action.dest] if action.dest in values else getattr(args, action.dest)
        if value is None or value is False:
            continue
        flag = action.option_strings[0]
        if action.nargs == 0:  # a flag (store_true)
            argv.append(flag)
        else:  # a duration as seconds ("300.0s"); a size as bytes; the rest as they print
            argv += [flag, f"{value}s" if action.type is parse_duration else str(value)]
    return argv


def process_started() -> float:
    """When this process started, on the time.perf_counter() clock (Linux; elsewhere: now)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
            age = float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        age = 0.0
    return time.perf_counter() - max(age, 0.0)


def campaign_status(result) -> int:
    """A finished campaign's exit status (fuzz, fuzz --cluster, nightly): 2 when the harness itself
    failed, 1 for an unknown failure, 3 when it found none but checked nothing on some path."""
    if result.harness_errors:
        print(f"error: the harness itself failed {len(result.harness_errors)} time(s) (above); what it was "
              f"checking then is unknown, not fixed", file=sys.stderr)
        return HARNESS_ERROR
    if result.failures:
        return FAILED
    return NOTHING_CHECKED if result.unchecked_paths() else OK


def fuzz(args: argparse.Namespace) -> int:
    """`fuzz`: a campaign on this machine (in this process, or in --workers worker processes), a
    resumed one (--resume), or one in Ray shards (--cluster)."""
    # importing torch and the paths is inside the budget too; from the command line, all the
    # process's start-up (main's `started`)
    started = _started(args)
    if args.workers <= 0 or args.cluster:
        return _fuzz(args, started, [], None)
    # the first workers import torch while this process does (harness/prestart.py)
    from harness.prestart import prestart_workers, stop_unused

    scratch = Path(tempfile.mkdtemp(prefix="harness-workers-"))
    prestarted = prestart_workers(args.workers, scratch)
    try:
        return _fuzz(args, started, prestarted, scratch)
    finally:
        stop_unused(prestarted)  # those no campaign was given (bad input, say)


def _fuzz(args: argparse.Namespace, started: float, prestarted: list, scratch: Path | None) -> int:
    global EXIT_AT_ONCE
    from harness.campaign import run_campaign
    from harness.progress import CampaignProgress
    from harness.records import DATABASE_NAME, ExampleLog, log_path, read_log
    from harness.results import CampaignResult

    if args.workers < 0:
        raise SystemExit(f"error: --workers {args.workers} must be 0 (in this process) or more.")
    out = Path(args.resume or args.out or time.strftime("campaigns/%Y%m%d-%H%M%S"))
    # one-time costs are not charged to the budget: the native build (about 40 s on a fresh machine,
    # cached afterwards) and, in this process, the warm-up check
    built: list[float] = []
    log_file = log_path(out)
    if args.resume:
        if not log_file.exists():
            raise SystemExit(f"error: --resume {args.resume}: no campaign log {log_file}; give the --out folder "
                             f"of the campaign to continue.")
        result = CampaignResult.from_records(read_log(log_file))
        paths = selected_paths(args.paths or ",".join(result.paths), built)  # the same campaign, unless told otherwise
        device, lifetimes, twins = result.device, result.lifetimes, result.twins_on
    else:
        if log_file.exists():
            raise SystemExit(f"error: {out} already holds a campaign ({log_file}); continue it with "
                             f"--resume {out}, or choose another --out.")
        devices = selected_devices(args.device)  # first, so that a missing GPU is the error reported
        paths, device = on_devices(selected_paths(args.paths, built), devices)
        lifetimes, twins = not args.no_lifetimes, not args.no_twins
        result = CampaignResult([p.name for p in paths], device, lifetimes=lifetimes)
    # a campaign with a fixed example count (a test, a benchmark) checks just those: no seeds first
    seeds = not args.no_seeds and args.max_examples is None
    database, local_database = args.database or str(out / DATABASE_NAME), out / DATABASE_NAME
    reached_database(database, local_database)
    uncharged = sum(built)
    if args.workers == 0 and not args.cluster:
        try:
            uncharged += _warmed_up(paths, device, lifetimes)
        except Exception as e:  # noqa: BLE001 -- one small graph the harness could not check: its own bug
            traceback.print_exception(e)
            print(f"error: the harness itself failed checking its warm-up graph ({type(e).__name__}: {e}); "
                  f"nothing was checked", file=sys.stderr)
            return HARNESS_ERROR
    budget = without_reports(args.budget) - (time.perf_counter() - started - uncharged)
    if args.cluster:
        return _fuzz_on_cluster(args, paths, out, budget)
    EXIT_AT_ONCE = True  # every record is flushed and the reports written before main returns
    log = ExampleLog(log_file)
    with CampaignProgress(result, args.budget) as progress:
        def on_record(record: dict) -> None:
            log.write(record)
            progress.update(record)

        # a worker dead outside any example (WorkerError) or the harness's own bug ends the campaign too
        with ending(errors=True) as end:
            if args.workers == 0:
                run_campaign(paths, budget_s=budget, device=device, out_dir=out, uncharged_s=uncharged,
                             database=example_database(database, local_database), max_examples=args.max_examples,
                             lifetimes=lifetimes, result=result, on_record=on_record,
                             replay_shared=not args.shard, seeds=seeds, twins=twins, every_path=args.every_path)
            else:
                from harness.workers import run_parallel

                memory = {} if args.worker_memory is None else {"memory_limit": args.worker_memory}
                run_parallel([p.name for p in paths], workers=args.workers, budget_s=budget, device=device,
                             out_dir=out, database=database, max_examples=args.max_examples,
                             lifetimes=lifetimes, hang_s=args.hang_timeout, result=result,
                             on_record=on_record, replay_shared=not args.shard, uncharged_s=uncharged,
                             seeds=seeds, twins=twins, every_path=args.every_path, prestarted=prestarted,
                             scratch=scratch, **memory)
        if end.interrupted or end.error is not None:
            result.finish()
    log.close()
    return finish(result, out, args.json, error=end.error, interrupted=end.interrupted,
                  then=f"interrupted: continue with `python -m harness fuzz --resume {out}`")


def coverage(args: argparse.Namespace) -> int:
    """fuzz's campaign under coverage.py (harness/torch_coverage.py), then the coverage of torch's
    custom-Function modules. The analysis after the campaign is not charged to its budget."""
    from harness.records import log_path
    from harness.torch_coverage import CoverageSetupError, measuring, report

    out = Path(args.out or time.strftime("campaigns/%Y%m%d-%H%M%S"))
    if log_path(out).exists():
        raise SystemExit(f"error: {out} holds a campaign already ({log_path(out)}); coverage measures a "
                         f"campaign from its start: choose another --out.")
    args.out, coverage_json, args.json = str(out), args.json, str(out / "summary.json")
    try:
        with measuring(out):  # started before fuzz imports torch: module-level lines count too
            code = fuzz(args)
        report(out, coverage_json)
    except CoverageSetupError as e:
        raise SystemExit(f"error: {e}") from None
    return code


def nightly(args: argparse.Namespace) -> int:
    """The campaign's property under HypoFuzz (harness.nightly) for the budget, then the reports."""
    started = _started(args)
    from harness.nightly import HYPOFUZZ_LOG_NAME, NightlyConfig, hypofuzz_missing, run_nightly
    from harness.records import DATABASE_NAME, log_path

    missing = hypofuzz_missing()
    if missing is not None:
        raise SystemExit(f"error: {missing}.")
    if args.workers < 1:
        raise SystemExit(f"error: --workers {args.workers}: HypoFuzz needs 1 worker process or more.")
    out = Path(args.out or time.strftime("campaigns/nightly-%Y%m%d-%H%M%S"))
    if log_path(out).exists():
        raise SystemExit(f"error: {out} already holds a campaign ({log_path(out)}); choose another --out "
                         f"(HypoFuzz carries on from the example database, --database, not from a folder).")
    paths, device = campaign_paths(args.paths, args.device)  # one sentence for a bad path or device
    database = args.database or str(out / DATABASE_NAME)
    reached_database(database, out / DATABASE_NAME)
    out.mkdir(parents=True, exist_ok=True)
    config = NightlyConfig(paths=",".join(p.name for p in paths if "@" not in p.name), device=args.device,
                           out=str(out), database=database, lifetimes=not args.no_lifetimes,
                           keep_fuzzing=args.keep_fuzzing, twins=not args.no_twins, seeds=not args.no_seeds)
    how, error = "interrupted", None
    with ending() as end:
        result, how, error = run_nightly(config, budget_s=without_reports(args.budget), workers=args.workers,
                                         started=started)
    if end.interrupted:
        from harness.report import load

        result = load(out)
    return finish(result, out, args.json, error=error, interrupted=end.interrupted,
                  notes=[f"HypoFuzz {how}; its output: {out / HYPOFUZZ_LOG_NAME}"])


def _fuzz_on_cluster(args: argparse.Namespace, paths: list, out: Path, budget: float) -> int:
    """fuzz --cluster: shards of this campaign as Ray tasks, merged into one report in `out`."""
    from harness.cluster import ClusterError, run_on_ray

    if args.resume:
        raise SystemExit("error: --resume continues a campaign of this machine; run it without --cluster.")
    # the paths chosen here, each shard the same; a path on a further device ("eager@cuda") is
    # added again by each shard's --device
    argv = campaign_argv(args, leave_out=("out",), paths=",".join(p.name for p in paths if "@" not in p.name),
                         budget=round(max(budget - CLUSTER_SLACK_S, 1.0)))
    try:
        result, errors = run_on_ray(args.cluster, argv, out, shards=args.shards)
    except ClusterError as e:
        raise SystemExit(f"error: {e}") from None
    return finish(result, out, args.json, shards_lost=bool(errors),
                  before=[f"a shard failed: {line}" for line in errors]
                  + [f"{args.shards or 'one per node'} shard(s) on Ray at {args.cluster}; logs and reproducers "
                     f"under {out}/shard-<i>/\n"])


class Ending:
    """How a session's run ended: interrupted (Ctrl-C, SIGTERM), or stopped by an exception."""

    interrupted = False
    error: Exception | None = None


@contextlib.contextmanager
def ending(*, errors: bool = False) -> Iterator[Ending]:
    """Run a session's campaign: SIGTERM (a CI job cancelled or timed out, `timeout`, `kill`) ends it
    as Ctrl-C does, and either ends the block with `interrupted` set, so that the summary and
    reports of what was checked are still written and the campaign can be resumed. errors: an
    exception ends it too (kept in `error`), reported after the summary."""
    end = Ending()

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield end
    except KeyboardInterrupt:
        end.interrupted = True
    except Exception as e:  # noqa: BLE001 -- only with errors=True; re-raised otherwise
        if not errors:
            raise
        end.error = e
    finally:
        signal.signal(signal.SIGTERM, before)


def finish(result, out: Path, json_file: str | None, *, error: Exception | str | None = None,
           interrupted: bool = False, then: str | None = None, before: Sequence[str] = (),
           notes: Sequence[str] = (), shards_lost: bool = False) -> int:
    """The end of every session: `before`, the summary and the reports of what was checked (after an
    interrupt or an error too), `notes`, then its exit status: 2 for `error` (said after the
    summary), 130 when interrupted (saying `then`), else campaign_status; with shards_lost a
    campaign without failures reads 1."""
    for line in before:
        print(line)
    write_reports(result, out, json_file)
    for line in notes:
        print(line)
    if error is not None:
        print(f"error: {_stopped_by(error)}", file=sys.stderr)
        return HARNESS_ERROR
    if interrupted:
        if then is not None:
            print(then)
        return INTERRUPTED
    status = campaign_status(result)
    return FAILED if shards_lost and status in (OK, NOTHING_CHECKED) else status


def _stopped_by(error: Exception | str) -> str:
    """What stopped a session, in a sentence; the harness's own bug gets its traceback first."""
    if isinstance(error, str):
        return error
    from harness.workers import WorkerError

    if isinstance(error, WorkerError):
        return f"the campaign stopped: {error}"
    traceback.print_exception(error)
    return f"the harness itself failed ({type(error).__name__}: {error}); the campaign stopped"


def without_reports(budget: float) -> float:
    """What is left of a session's budget once the reports' part is kept back."""
    return budget - min(REPORT_S, 0.15 * budget)


def _started(args: argparse.Namespace) -> float:
    """Where the budget starts counting: the process's start from the command line, else now."""
    return time.perf_counter() if args.started is None else args.started


def _warmed_up(paths: list, device: str, lifetimes: bool) -> float:
    """campaign.warm_up in this process (first-use imports and compile caches); its seconds."""
    from harness.campaign import warm_up

    began = time.perf_counter()
    warm_up(paths, device, lifetimes)
    return time.perf_counter() - began


def example_database(location: str, local: Path):
    """Hypothesis' example database at a folder, a redis:// URL or github:OWNER/REPO[/ARTIFACT]
    (read beside the campaign's own folder `local`)."""
    from harness.cluster import ClusterError, example_database as database_at

    try:
        return database_at(location, local)
    except ClusterError as e:
        raise SystemExit(f"error: {e}") from None


def reached_database(location: str, local: Path) -> None:
    """One sentence now if the database cannot be used (a Redis URL nobody answers). One read here,
    too: a GitHub artifact is downloaded once, before the workers start, and they read its cached copy."""
    list(example_database(location, local).fetch(b"reached before the campaign"))


def write_reports(result, out: Path, json_file: str | None) -> None:
    """The summary on stdout, the JSON summary, report.md and report.html."""
    from harness.records import log_path
    from harness.report import write_reports as write

    print(result.summary())
    if json_file:
        Path(json_file).write_text(json.dumps(result.as_json(), indent=2) + "\n")
        print(f"\nsummary written to {json_file}")
    md, page = write(result, out)
    print(f"log {log_path(out)}, reports {md} and {page}" if log_path(out).exists() else f"reports {md} and {page}")


__all__ = ["CLUSTER_SLACK_S", "DEVICE_HELP", "FAILED", "HARNESS_ERROR", "INTERRUPTED", "MEMORY_PER_WORKER",
           "NOTHING_CHECKED", "OK", "REPORT_S", "WORKER_MEMORY_ENV", "add_campaign_options", "campaign_argv",
           "campaign_status", "coverage", "default_workers",
           "ending", "example_database", "finish", "fuzz", "nightly", "parse_duration", "parse_size",
           "process_started", "reached_database", "without_reports", "write_reports"]
