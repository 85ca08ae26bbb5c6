"""Command line: argument parsing and dispatch (a fuzz session runs in harness.session).
`python -m harness --help`."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from harness import session
from harness.selection import on_devices, selected_devices, selected_paths
from harness.session import (DEVICE_HELP, FAILED, HARNESS_ERROR, NOTHING_CHECKED, OK, REPORT_S,
                             add_campaign_options, parse_duration)

#: `check module:FunctionName`: a user's own autograd.Function instead of a spec file
FUNCTION_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def _attribute(target: str, option: str):
    import importlib

    module_name, _, name = target.partition(":")
    try:
        value = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"error: {option} {target!r}: cannot import {module_name!r} ({e}); run from the "
                         "folder that holds it or add it to PYTHONPATH.") from None
    for part in name.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise SystemExit(f"error: {option} {target!r}: {module_name!r} has no attribute {name!r}.") from None
    return value


def cmd_check_function(args: argparse.Namespace) -> int:
    from harness.function_check import FunctionCheckError, NothingChecked, check_function

    if not args.samples:
        raise SystemExit(f"error: check {args.spec} needs --samples module:function (a function returning "
                         "argument tuples or a Hypothesis strategy).")
    function = _attribute(args.spec, "check")
    samples = _attribute(args.samples, "--samples")
    devices = selected_devices(args.device)  # one sentence when CUDA is asked for and absent
    if len(devices) != 1:
        raise SystemExit(f"error: check {args.spec} takes one --device (cpu or cuda), not {args.device!r}.")
    try:
        report = check_function(function, samples, paths=args.paths.split(",") if args.paths else None,
                                device=devices[0], checks=args.checks.split(",") if args.checks else None,
                                max_examples=args.max_examples)
    except FunctionCheckError as e:
        print(e.report.table())
        print(e)
        return FAILED
    except NothingChecked as e:
        print(e.report.table())
        print(e)
        return NOTHING_CHECKED
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    print(report.table())
    return OK


def cmd_report(args: argparse.Namespace) -> int:
    from harness.report import load, write_reports

    try:
        result = load(args.folder)
    except FileNotFoundError as e:
        raise SystemExit(f"error: {e}") from None
    md, page = write_reports(result, args.folder)
    print(result.summary())
    print(f"\nreports rebuilt from the log: {md} and {page}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from harness.report import diff, load

    try:
        last, tonight = load(args.last), load(args.tonight)
    except FileNotFoundError as e:
        raise SystemExit(f"error: {e}") from None
    text, new = diff(last, tonight)
    print(text)
    return FAILED if new else HARNESS_ERROR if tonight.harness_errors else OK


def cmd_reduce(args: argparse.Namespace) -> int:
    """Reduce a plain reproducer's source while it fails the same way (harness/reduce.py)."""
    import torch._dynamo  # noqa: F401 -- imported once here: each candidate runs in a child forked from this process

    from harness import reduce

    try:
        reduced = reduce.reduce_file(args.file, budget_s=args.budget, out=args.out, fresh=args.fresh)
    except (ValueError, FileNotFoundError, ModuleNotFoundError) as e:
        raise SystemExit(f"error: {e}") from None
    print(f"{args.out or args.file}: {reduced.lines_before} -> {reduced.lines_after} lines "
          f"({reduced.chars_before} -> {reduced.chars_after} characters), "
          f"{reduced.candidates} candidates in {reduced.seconds:.1f} s ({reduced.ended})")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from harness.check import check
    from harness.spec import SpecError, load_spec

    if FUNCTION_TARGET.match(args.spec) and not Path(args.spec).exists():
        return cmd_check_function(args)
    try:
        spec = load_spec(args.spec)
    except SpecError as e:
        raise SystemExit(f"error: {e}") from None
    twins: bool | str = False
    if args.twins:
        from harness.oracles.twins import PAIR_NAMES

        if args.twins not in ("auto", *PAIR_NAMES):
            raise SystemExit(f"error: --twins {args.twins!r} is not a twin pair; use auto (the pair the spec's "
                             f"hash chooses) or one of {', '.join(PAIR_NAMES)}.")
        twins = True if args.twins == "auto" else args.twins
    devices = selected_devices(args.device)
    paths, device = on_devices(selected_paths(args.paths), devices)
    verdict = check(spec, paths, device, twins=twins)
    if verdict.twin is not None:
        print(f"{verdict.twin.twin.label}: " + ", ".join(f"{name} {r.counted_as}" for name, r in verdict.twin.paths.items()))
    for outcome in verdict.outcomes.values():
        print(f"{outcome.path}: {outcome.status} {outcome.reason}")
    print(verdict.report())
    if verdict.failed:
        return FAILED
    return NOTHING_CHECKED if verdict.unchecked() else OK


def _explained_shares(campaign: str) -> dict[str, float]:
    """Known issue id -> the share of the campaign's examples where it explained a mismatch on at
    least one path (its witness seen, every mismatch of the path its damage or another entry's)."""
    import collections

    from harness.records import log_path, read_log

    log = log_path(Path(campaign))
    if not log.exists():
        raise SystemExit(f"error: --campaign {campaign}: no campaign log {log}; give the --out folder of a "
                         f"fuzz campaign.")
    examples, hit = 0, collections.Counter()
    for record in read_log(log):
        if record["kind"] == "example":
            examples += 1
            hit.update({k for o in record["outcomes"].values() for k in o.get("known", [])})
    return {issue: n / examples for issue, n in hit.items()} if examples else {}


def cmd_known(args: argparse.Namespace) -> int:
    import torch

    from harness import known_issues

    if args.rates:
        explained = _explained_shares(args.campaign) if args.campaign else None
        for issue, share in known_issues.trigger_rates(args.examples):
            seen = "" if explained is None else f"{100 * explained.get(issue.id, 0.0):6.1f}%  "
            print(f"{100 * share:6.1f}%  {seen}{issue.id:<42} damages: {issue.damages}")
        print(f"\nfirst column: share of {args.examples} generated specs whose structure triggers each known torch "
              f"issue (the trigger only; most never show the bug)")
        if explained is None:
            print("how often each explained a mismatch: give --campaign DIR (a fuzz campaign's folder)")
        else:
            print(f"second column: share of {args.campaign}'s examples where it explained a mismatch on some path")
        return 0
    try:
        chosen = known_issues.by_ids(args.ids)
    except ValueError as e:
        print(e)
        return 2
    if args.bugs:
        print(known_issues.bug_list(), end="")
        return 0
    if args.report or args.measure:
        return _known_reports(args, chosen)
    if args.list:
        for issue in chosen:
            print(f"{issue.id:<54} upstream: {issue.upstream_text()}")
        return 0
    surprises = 0
    for issue, state, last_line in known_issues.run_reproducers([k.id for k in chosen]):
        expected = "present" if issue.affects_installed_torch() else "fixed"
        note = "as the registry says" if state == expected else f"the registry says {expected}"
        print(f"{state:<8} {issue.id:<54} ({note})  upstream: {issue.upstream_text()}")
        if state == "broken":
            print(f"{'':<8} the reproducer failed another way: {last_line}")
        surprises += state != expected
    if surprises:
        print(f"\n{surprises} reproducer(s) disagree with the registry's first/last affected versions "
              f"for torch {torch.__version__}: update the registry (harness/known_issues/) or the reproducer")
    return 1 if surprises else 0


def _known_reports(args: argparse.Namespace, chosen: list) -> int:
    """`known --measure` (run the reduced reproducers under --python, store what they print) and
    `known --report ID|all` (write the upstream-ready reports from the registry and the store)."""
    from harness import known_issues
    from harness.known_issues import reports

    store = Path(args.measurements) if args.measurements else reports.MEASUREMENTS
    if args.measure:
        reports.measure(chosen, python=args.python, again=args.again, store=store)
    if args.report:
        try:
            issues = known_issues.by_ids(None if "all" in args.report else args.report)
        except ValueError as e:
            print(e)
            return 2
        data = reports.load_measurements(store)
        written = reports.write_reports(issues, Path(args.out), data)
        ready = sum(reports.readiness(k, data) == "ready to file" for k in issues)
        print(f"wrote {len(written)} report(s) and the index README.md to {args.out} ({ready} ready to file)")
    return 0


def cmd_seeds(args: argparse.Namespace) -> int:
    from harness import known_issues, seeds

    if args.write:
        try:
            found = seeds.write_seeds(ids=args.ids or None, seconds=args.seconds, progress=print)["seeds"]
        except ValueError as e:
            print(e)
            return 2
        print(f"\nwrote {seeds.SEEDS_FILE}: seeds for {len(found)} of {len(known_issues.KNOWN_ISSUES)} entries")
        return 0
    refused = seeds.seeds_refused()
    if refused:
        print(f"campaigns do not use these seeds: {refused}")
    print("\n".join(seeds.seed_table(seeds.load_seeds(), known_issues.KNOWN_ISSUES)))
    return 0


def cmd_selfeval(args: argparse.Namespace) -> int:
    from harness.selfeval import CATALOG
    from harness.selfeval.evaluate import main as selfeval_main

    if args.list:
        for fault in CATALOG.values():
            print(f"{fault.name:<36} {fault.family:<9} {fault.description}")
        return 0
    names = [n.strip() for n in args.faults.split(",") if n.strip()] if args.faults else None
    unknown = [n for n in names or () if n not in CATALOG]
    if unknown:
        raise SystemExit(f"error: no seeded fault {', '.join(unknown)}; see `python -m harness selfeval --list`.")
    return selfeval_main(names, args.budget_per_fault, args.json, args.out, args.workers, twins=not args.no_twins)


def _passthrough(command: str, rest: list[str]) -> int:
    """Subcommands whose own parsers live with their code."""
    if command == "bench":
        from harness.counting.bench import bench_main
        return bench_main(rest)
    if command == "compare":
        from harness.counting.bench import compare_main
        return compare_main(rest)
    from harness.microbench import main as microbench_main
    return microbench_main(rest) or 0


PASSTHROUGH = {"bench": "instruction counts under callgrind (see bench --help)",
               "compare": "per-path deltas between two bench JSON files",
               "microbench": "wall time per apply: eager / owned / borrowed"}


def cmd_profile(args: argparse.Namespace) -> int:
    from harness.profile import write_profile

    paths = [p.name for p in selected_paths(args.paths)]
    return write_profile(paths, args.examples, json_file=args.json, lifetimes=not args.no_lifetimes,
                         twins=not args.no_twins)


def cmd_build_native(args: argparse.Namespace) -> int:
    from harness import native

    try:
        location = native.build(verbose=True)
    except native.NativeBuildError as e:
        raise SystemExit(f"error: {e}") from None
    print(f"native extension ready: {location}")
    return 0


def main(argv: list[str] | None = None, *, started: float | None = None) -> int:
    """`started`: where a budget starts counting (python -m harness gives process_started(): the
    interpreter's start-up, a sitecustomize and the imports are inside it); None: now."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in PASSTHROUGH:  # their own options may start with "--"
        return _passthrough(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    args.started = started
    return args.func(args)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand but the PASSTHROUGH ones (which parse their own options)."""
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    fuzz = sub.add_parser("fuzz", help="a fuzz campaign over the selected paths",
                          description="A fuzz campaign. Every checked example is a line of DIR/examples.jsonl "
                                      "(flushed as written); reports, reproducers and the example database go "
                                      "to DIR too. A live display shows progress on a terminal, plain lines "
                                      "every 10 s otherwise. Exit status: 1 for an unknown failure, 3 when "
                                      "there is none but some path (or the whole campaign) checked nothing, "
                                      "2 when the harness itself failed (a harness error: replaying or "
                                      "shrinking a cause, checking an example or a seed).")
    add_campaign_options(fuzz)
    fuzz.add_argument("--json", help="write a machine-readable summary to this file")
    fuzz.add_argument("--resume", metavar="DIR",
                      help="continue the campaign in DIR (after an interrupt or a kill) with this budget: "
                           "its earlier failures are replayed first, its counts carry on (Ctrl-C and SIGTERM "
                           "end a campaign with its summary and reports written; after kill -9 they are "
                           "rebuilt from its log)")
    fuzz.add_argument("--cluster", metavar="ADDRESS",
                      help="run the campaign as Ray tasks on the cluster at ADDRESS (host:port of "
                           "`ray start --head`), one shard per node, merged into one report here; each "
                           "shard keeps --workers' crash isolation. Needs pip install -e '.[cluster]'")
    fuzz.add_argument("--shards", type=int, help="with --cluster: this many shards (default: one per node)")
    # set by --cluster for each Ray shard: shard 0 alone replays the shared database's failures
    # first, so that the merged campaign counts their examples once
    fuzz.add_argument("--shard", type=int, default=0, help=argparse.SUPPRESS)
    fuzz.set_defaults(func=session.fuzz)

    cov = sub.add_parser("coverage", help="a fuzz campaign under coverage.py: which branches of torch's "
                                          "custom-Function modules it ran (harness/torch_coverage.py)",
                         description="The campaign of `fuzz` (the same options, outputs and exit status) "
                                     "measured by coverage.py with branch coverage, restricted to torch's modules "
                                     "that handle custom Functions (harness/torch_coverage.py, FUNCTION_MODULES). "
                                     "It runs in this process by default (--workers 0); with --workers N the workers are measured "
                                     "too (coverage.py's subprocess, _exit and fork patches), but a worker killed at the "
                                     "budget's end in the middle of an example (seconds long on dynamo) loses all its "
                                     "data. Prints line and branch coverage per module and the branches never "
                                     "taken, grouped by function; all of them go to DIR/uncovered.txt, coverage.py's "
                                     "JSON report to DIR/coverage.json, the campaign's summary to DIR/summary.json.")
    # in this process by default: at the budget's end a worker still in an example is killed, and
    # coverage.py loses all that worker measured
    add_campaign_options(cov, workers=0)
    cov.add_argument("--json", help="write the coverage numbers per module (and the missed branches) to this file")
    cov.set_defaults(func=session.coverage, resume=None, cluster=None, shards=None, shard=0)

    night = sub.add_parser("nightly", help="the campaign's property under HypoFuzz, the coverage-guided fuzzer, "
                                           "for a budget; then the report (docs/nightly.md; needs the fuzz extra)",
                           description="Runs `hypothesis fuzz` (HypoFuzz) on the campaign's property "
                                       "(harness/fuzz_target.py), guided by the branches it reaches in torch's "
                                       "modules that handle custom Functions, until the budget is spent; then "
                                       "writes the report. The folder is a campaign's: examples.jsonl, reproducers, "
                                       "report.md/html (`report DIR` rebuilds them); HypoFuzz's output goes to "
                                       "DIR/hypofuzz.log. Exit status as fuzz's.")
    night.add_argument("--paths", help="comma-separated paths (default: all available here, as fuzz)")
    night.add_argument("--budget", type=parse_duration, default=600.0,
                       help="wall time for everything, e.g. 10m, 8h (default 10m); the reports keep "
                            f"min({REPORT_S:g} s, 15%%) of it, replaying the saved failures at most 15%%")
    night.add_argument("--out", help="campaign folder, new or empty (default: a new campaigns/nightly-<date>-<time>/)")
    night.add_argument("--database", help="Hypothesis example database, HypoFuzz's too: a folder, or "
                                          "redis://host:port shared by every machine of the night (needs the "
                                          "cluster extra), or github:OWNER/REPO[/ARTIFACT] (default: DIR/examples-db)")
    night.add_argument("--workers", type=int, default=1, help="HypoFuzz worker processes (default 1)")
    night.add_argument("--device", default="cpu", help=DEVICE_HELP)
    night.add_argument("--json", help="write a machine-readable summary to this file")
    night.add_argument("--no-lifetimes", action="store_true", help="skip the lifetime oracle")
    night.add_argument("--keep-fuzzing", action="store_true",
                       help="an unknown failure is recorded with its reproducer (as found) and saved for fuzz "
                            "campaigns to replay and shrink, but HypoFuzz is not told: it goes on fuzzing "
                            "(by default it shrinks the failure and fuzzes no more in that worker)")
    night.add_argument("--no-twins", action="store_true", help="skip the twin-form oracle (docs/twins.md)")
    night.add_argument("--no-seeds", action="store_true",
                       help="do not check the known torch issues' seeds and mutants of them first (docs/seeds.md)")
    night.set_defaults(func=session.nightly)

    rep = sub.add_parser("report", help="rebuild DIR/report.md and DIR/report.html from DIR/examples.jsonl")
    rep.add_argument("folder", metavar="DIR")
    rep.set_defaults(func=cmd_report)

    dif = sub.add_parser("diff", help="new failures, fixed ones and rate changes between two campaigns "
                                      "(exit status 1 for new failures, known torch issues never count; 2 when "
                                      "the later campaign holds harness errors, and then nothing is called fixed)")
    dif.add_argument("last", metavar="LAST", help="the earlier campaign folder (or its examples.jsonl)")
    dif.add_argument("tonight", metavar="TONIGHT", help="the later campaign folder (or its examples.jsonl)")
    dif.set_defaults(func=cmd_diff)

    chk = sub.add_parser("check", help="check one spec file (JSON), or your own autograd.Function "
                                       "(module:FunctionName --samples module:function), on the selected paths",
                         description="Exit status: 1 for a failure, 3 when none failed but some selected path "
                                     "(or, for a Function, some check asked for) checked nothing: the last "
                                     "line names what was not checked and why.")
    chk.add_argument("spec", help="a spec file, or module:FunctionName")
    chk.add_argument("--paths")
    chk.add_argument("--twins", metavar="PAIR", help="also check the spec's twin (docs/twins.md): auto (the pair "
                                                     "a campaign would choose) or a pair's name, e.g. style")
    chk.add_argument("--device", default="cpu", help=DEVICE_HELP)
    chk.add_argument("--samples", help="with module:FunctionName: module:function returning argument tuples "
                                       "or a Hypothesis strategy")
    chk.add_argument("--checks", help="with module:FunctionName: comma-separated checks (default: all)")
    chk.add_argument("--max-examples", type=int, help="with a Hypothesis strategy: examples to run")
    chk.set_defaults(func=cmd_check)

    red = sub.add_parser("reduce", help="delete statements, arguments and Functions from a plain reproducer "
                                        "while it still fails the same way (pysource-minimize; docs/reduce.md)")
    red.add_argument("file", metavar="FILE", help="a plain reproducer a campaign wrote")
    red.add_argument("--budget", type=parse_duration, default=60.0, help="wall time, e.g. 60s, 5m (default 60s)")
    red.add_argument("--out", help="write the reduced script here (default: replace FILE)")
    red.add_argument("--fresh", action="store_true", help="run each candidate in a new interpreter instead of a "
                                                          "child forked from this one (slower: torch is imported each time)")
    red.set_defaults(func=cmd_reduce)

    known = sub.add_parser("known", help="run every known torch issue's reproducer on this torch "
                                         "(present or fixed), or --rates: how often each is triggered")
    known.add_argument("--rates", action="store_true",
                       help="print each entry's trigger share over generated specs instead")
    known.add_argument("--examples", type=int, default=400, help="generated specs for --rates (default 400)")
    known.add_argument("--campaign", metavar="DIR",
                       help="with --rates: also the share of this campaign's examples where each entry explained "
                            "a mismatch")
    known.add_argument("--list", action="store_true",
                       help="print each entry's id and upstream reference without running the reproducers")
    known.add_argument("--bugs", action="store_true",
                       help="print docs/bugs.md, the published bug list, generated from the registry")
    known.add_argument("--report", action="append", metavar="ID|all",
                       help="write the upstream-ready bug report of this entry (repeatable; `all`: every entry) "
                            "to --out, from its reduced reproducer and the stored measurements (runs nothing)")
    known.add_argument("--out", metavar="DIR", default="known-issue-reports",
                       help="with --report: the folder for the reports and their index README.md "
                            "(default known-issue-reports)")
    known.add_argument("--measure", action="store_true",
                       help="run each chosen entry's reduced reproducer with every argument it takes under "
                            "--python and store the results (entries already measured on that torch with the "
                            "same reproducer are skipped; --again measures them again); minutes per entry")
    known.add_argument("--python", default=sys.executable,
                       help="with --measure: the Python (and so the torch release) to run the reproducers with")
    known.add_argument("--again", action="store_true", help="with --measure: measure entries measured already")
    known.add_argument("--measurements", metavar="FILE",
                       help="the measurements' store (default: harness/known_issues/measurements.json)")
    known.add_argument("ids", nargs="*", metavar="ID", help="only these entries (default: every one)")
    known.set_defaults(func=cmd_known)

    sd = sub.add_parser("seeds", help="the seed graph of each known torch issue that campaigns start from "
                                      "(harness/seeds.py): which entries have one, per drawing")
    sd.add_argument("--write", action="store_true",
                    help="search the generator again for every entry's seed (or those of the IDs given, keeping "
                         "the others) and rewrite harness/known_issues/seeds.json")
    sd.add_argument("--seconds", type=parse_duration, default=20.0,
                    help="with --write: search time per entry and drawing (default 20s)")
    sd.add_argument("ids", nargs="*", metavar="ID", help="with --write: only these entries")
    sd.set_defaults(func=cmd_seeds)

    ev = sub.add_parser("selfeval", help="run each seeded fault (harness/selfeval) in a worker process: "
                                         "detected, seconds and examples to detect, reproducer lines")
    ev.add_argument("--faults", help="comma-separated fault names (default: every evaluated fault)")
    ev.add_argument("--budget-per-fault", type=parse_duration, default=60.0,
                    help="fuzzing time per fault, e.g. 60s (default 60s); shrinking comes on top")
    ev.add_argument("--workers", type=int, default=1, help="faults run at a time (default 1: one core each)")
    ev.add_argument("--json", help="write the table as JSON to this file")
    ev.add_argument("--out", default="selfeval-failures", help="folder for reproducers (default: selfeval-failures/)")
    ev.add_argument("--list", action="store_true", help="list the catalog and exit")
    ev.add_argument("--no-twins", action="store_true",
                    help="campaigns without the twin-form oracle (fuzz's default has it: docs/twins.md)")
    ev.set_defaults(func=cmd_selfeval)

    prof = sub.add_parser("profile", help="where a campaign's time goes: ms/example per stage, examples/s, "
                                          "and the whole check against the raw runs of the same graphs",
                          description="Runs the campaign's fuzz loop in this process over N examples and "
                                      "times each stage (docs/profile.md).")
    prof.add_argument("--examples", type=int, default=300, help="examples to generate and check (default 300)")
    prof.add_argument("--paths", default="eager,owned,borrowed", help="comma-separated paths "
                                                                      "(default eager,owned,borrowed)")
    prof.add_argument("--json", help='write {"examples_per_second": N, "stages": {stage: ms_per_example}, ...}')
    prof.add_argument("--no-lifetimes", action="store_true", help="without the lifetime oracle")
    prof.add_argument("--no-twins", action="store_true",
                      help="without the twin-form oracle (with it, the table gives ms/example with and without)")
    prof.set_defaults(func=cmd_profile)

    for name, text in PASSTHROUGH.items():
        sub.add_parser(name, help=text, add_help=False)  # listed in --help; dispatched above
    nat = sub.add_parser("build-native", help="build the native extension now (it also builds on first use)")
    nat.set_defaults(func=cmd_build_native)
    return parser


if __name__ == "__main__":
    sys.exit(main())
