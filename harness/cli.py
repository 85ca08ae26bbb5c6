"""Command line: argument parsing only. `python -m harness --help`."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s?)?$")


def parse_duration(text: str) -> float:
    """'90s', '5m', '8h', '1h30m' or plain seconds -> seconds."""
    m = DURATION.match(text.strip())
    if not text.strip() or not m or not any(m.groups()):
        raise argparse.ArgumentTypeError(
            f"--budget {text!r} is not a duration; use e.g. 90s, 5m, 8h or 1h30m.")
    h, mins, s = m.groups()
    return int(h or 0) * 3600 + int(mins or 0) * 60 + float(s or 0)


def _paths(text: str | None):
    from harness import paths

    try:
        selected = paths.parse(text) if text else [paths.get(n) for n in paths.available_names()]
    except paths.UnknownPathError as e:
        raise SystemExit(f"error: {e}") from None
    for p in selected:
        why = p.available()
        if why is not None:
            raise SystemExit(f"error: path {p.name!r} cannot run here: {why}")
    return selected


def _device(text: str) -> str:
    import torch

    if text == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda needs a CUDA build of torch and a GPU; use --device cpu.")
    return text


def cmd_fuzz(args: argparse.Namespace) -> int:
    from harness.campaign import run_campaign

    if args.workers < 0:
        raise SystemExit(f"error: --workers {args.workers} must be 0 (in this process) or more.")
    paths = _paths(args.paths)
    device = _device(args.device)
    database = None
    if args.database:
        from hypothesis.database import DirectoryBasedExampleDatabase
        database = DirectoryBasedExampleDatabase(args.database)
    if args.workers == 0:
        result = run_campaign(paths, budget_s=args.budget, device=device, out_dir=args.out,
                              database=database, max_examples=args.max_examples,
                              lifetimes=not args.no_lifetimes)
    else:
        from harness.workers import run_parallel

        result = run_parallel([p.name for p in paths], workers=args.workers, budget_s=args.budget,
                              device=device, out_dir=args.out, database=args.database,
                              max_examples=args.max_examples, lifetimes=not args.no_lifetimes,
                              hang_s=args.hang_timeout)
    print(result.summary())
    if args.json:
        Path(args.json).write_text(json.dumps(result.as_json(), indent=2) + "\n")
        print(f"\nsummary written to {args.json}")
    return 1 if result.failures else 0


def cmd_check(args: argparse.Namespace) -> int:
    from harness.check import check
    from harness.spec import SpecError, load_spec

    try:
        spec = load_spec(args.spec)
    except SpecError as e:
        raise SystemExit(f"error: {e}") from None
    verdict = check(spec, _paths(args.paths), _device(args.device))
    for outcome in verdict.outcomes.values():
        print(f"{outcome.path}: {outcome.status} {outcome.reason}")
    print(verdict.report())
    return 1 if verdict.failed else 0


def cmd_known(args: argparse.Namespace) -> int:
    from harness import known_issues

    if args.rates:
        for issue, share in known_issues.trigger_rates(args.examples).items():
            print(f"{100 * share:6.1f}%  {issue.id:<42} damages: {issue.damages}")
        print(f"\nshare of {args.examples} generated specs whose structure triggers each known torch issue")
        return 0
    present = 0
    for issue, reproduced in known_issues.run_reproducers():
        expected = "affects" if issue.affects_installed_torch() else "does not affect"
        print(f"{'present' if reproduced else 'fixed':<8} {issue.id:<42} (the registry says it {expected} "
              f"this torch)")
        present += reproduced
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
    return selfeval_main(names, args.budget_per_fault, args.json, args.out, args.workers)


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


def cmd_build_native(args: argparse.Namespace) -> int:
    from harness import native

    try:
        location = native.build(verbose=True)
    except native.NativeBuildError as e:
        raise SystemExit(f"error: {e}") from None
    print(f"native extension ready: {location}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in PASSTHROUGH:  # their own options may start with "--"
        return _passthrough(argv[0], argv[1:])
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    fuzz = sub.add_parser("fuzz", help="a fuzz campaign over the selected paths")
    fuzz.add_argument("--budget", type=parse_duration, default=60.0, help="time budget for everything, e.g. 90s, 8h (default 60s): fuzzing stops at 85%% of it "
                           "and shrinking and writing reproducers share the rest")
    fuzz.add_argument("--paths", help="comma-separated paths (default: all available here)")
    fuzz.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    fuzz.add_argument("--json", help="write a machine-readable summary to this file")
    fuzz.add_argument("--out", default="failures", help="folder for reproducers (default: failures/)")
    fuzz.add_argument("--database", help="Hypothesis example database folder shared by campaigns")
    fuzz.add_argument("--max-examples", type=int, help="stop after this many examples")
    fuzz.add_argument("--workers", type=int, default=1,
                      help="worker processes, each isolated from crashes and hangs (default 1; "
                           "0 runs in this process, without isolation)")
    fuzz.add_argument("--hang-timeout", type=parse_duration, default=300.0,
                      help="a worker with no progress for this long is killed and its example "
                           "recorded as a hang (default 300s)")
    fuzz.add_argument("--no-lifetimes", action="store_true",
                      help="skip the lifetime oracle (refcounts and liveness); faster, checks less")
    fuzz.set_defaults(func=cmd_fuzz)

    chk = sub.add_parser("check", help="check one spec file (JSON) on the selected paths")
    chk.add_argument("spec")
    chk.add_argument("--paths")
    chk.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    chk.set_defaults(func=cmd_check)

    known = sub.add_parser("known", help="run every known torch issue's reproducer on this torch "
                                         "(present or fixed), or --rates: how often each is triggered")
    known.add_argument("--rates", action="store_true",
                       help="print each entry's trigger share over generated specs instead")
    known.add_argument("--examples", type=int, default=400, help="generated specs for --rates (default 400)")
    known.set_defaults(func=cmd_known)

    ev = sub.add_parser("selfeval", help="run each seeded fault (harness/selfeval) in a worker process: "
                                         "detected, seconds and examples to detect, reproducer lines")
    ev.add_argument("--faults", help="comma-separated fault names (default: every evaluated fault)")
    ev.add_argument("--budget-per-fault", type=parse_duration, default=60.0,
                    help="fuzzing time per fault, e.g. 60s (default 60s); shrinking comes on top")
    ev.add_argument("--workers", type=int, default=1, help="faults run at a time (default 1: one core each)")
    ev.add_argument("--json", help="write the table as JSON to this file")
    ev.add_argument("--out", default="selfeval-failures", help="folder for reproducers (default: selfeval-failures/)")
    ev.add_argument("--list", action="store_true", help="list the catalog and exit")
    ev.set_defaults(func=cmd_selfeval)

    for name, text in PASSTHROUGH.items():
        sub.add_parser(name, help=text, add_help=False)  # listed in --help; dispatched above
    nat = sub.add_parser("build-native", help="build the native extension now (it also builds on first use)")
    nat.set_defaults(func=cmd_build_native)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
