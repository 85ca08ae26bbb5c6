"""Command line: argument parsing only. `python -m harness --help`."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

DEVICE_HELP = ("cpu (default), cuda, or cpu,cuda: the same graph on both, the CUDA runs judged "
               "against the CPU's within the error bounds")
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


def _devices(text: str) -> tuple[str, ...]:
    from harness.devices import DeviceError, parse_devices

    try:
        return parse_devices(text)
    except DeviceError as e:
        raise SystemExit(f"error: {e}") from None


def _on_devices(paths: list, devices: tuple[str, ...]) -> tuple[list, str]:
    """The first device checks every path; each further one adds every path again as
    "<path>@<device>" (harness.paths.on_device), judged against the first device's results."""
    from harness.paths.on_device import on_device

    return paths + [on_device(p, d) for d in devices[1:] for p in paths], devices[0]


def cmd_fuzz(args: argparse.Namespace) -> int:
    from harness.campaign import run_campaign

    if args.workers < 0:
        raise SystemExit(f"error: --workers {args.workers} must be 0 (in this process) or more.")
    devices = _devices(args.device)  # first, so that a missing GPU is the error reported
    paths, device = _on_devices(_paths(args.paths), devices)
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
    from harness.function_check import FunctionCheckError, check_function

    if not args.samples:
        raise SystemExit(f"error: check {args.spec} needs --samples module:function (a function returning "
                         "argument tuples or a Hypothesis strategy).")
    function = _attribute(args.spec, "check")
    samples = _attribute(args.samples, "--samples")
    devices = _devices(args.device)  # one sentence when CUDA is asked for and absent
    if len(devices) != 1:
        raise SystemExit(f"error: check {args.spec} takes one --device (cpu or cuda), not {args.device!r}.")
    try:
        report = check_function(function, samples, paths=args.paths.split(",") if args.paths else None,
                                device=devices[0], checks=args.checks.split(",") if args.checks else None,
                                max_examples=args.max_examples)
    except FunctionCheckError as e:
        print(e.report.table())
        print(e)
        return 1
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    print(report.table())
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
    devices = _devices(args.device)
    paths, device = _on_devices(_paths(args.paths), devices)
    verdict = check(spec, paths, device)
    for outcome in verdict.outcomes.values():
        print(f"{outcome.path}: {outcome.status} {outcome.reason}")
    print(verdict.report())
    return 1 if verdict.failed else 0


def cmd_known(args: argparse.Namespace) -> int:
    import torch

    from harness import known_issues

    if args.rates:
        for issue, share in known_issues.trigger_rates(args.examples).items():
            print(f"{100 * share:6.1f}%  {issue.id:<42} damages: {issue.damages}")
        print(f"\nshare of {args.examples} generated specs whose structure triggers each known torch issue")
        return 0
    surprises = 0
    for issue, state, last_line in known_issues.run_reproducers():
        expected = "present" if issue.affects_installed_torch() else "fixed"
        note = "as the registry says" if state == expected else f"the registry says {expected}"
        print(f"{state:<8} {issue.id:<46} ({note})")
        if state == "broken":
            print(f"{'':<8} the reproducer failed another way: {last_line}")
        surprises += state != expected
    if surprises:
        print(f"\n{surprises} reproducer(s) disagree with the registry's first/last affected versions "
              f"for torch {torch.__version__}: update the registry (harness/known_issues.py) or the reproducer")
    return 1 if surprises else 0


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
    fuzz.add_argument("--device", default="cpu", help=DEVICE_HELP)
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

    chk = sub.add_parser("check", help="check one spec file (JSON), or your own autograd.Function "
                                       "(module:FunctionName --samples module:function), on the selected paths")
    chk.add_argument("spec", help="a spec file, or module:FunctionName")
    chk.add_argument("--paths")
    chk.add_argument("--device", default="cpu", help=DEVICE_HELP)
    chk.add_argument("--samples", help="with module:FunctionName: module:function returning argument tuples "
                                       "or a Hypothesis strategy")
    chk.add_argument("--checks", help="with module:FunctionName: comma-separated checks (default: all)")
    chk.add_argument("--max-examples", type=int, help="with a Hypothesis strategy: examples to run")
    chk.set_defaults(func=cmd_check)

    known = sub.add_parser("known", help="run every known torch issue's reproducer on this torch "
                                         "(present or fixed), or --rates: how often each is triggered")
    known.add_argument("--rates", action="store_true",
                       help="print each entry's trigger share over generated specs instead")
    known.add_argument("--examples", type=int, default=400, help="generated specs for --rates (default 400)")
    known.set_defaults(func=cmd_known)

    for name, text in PASSTHROUGH.items():
        sub.add_parser(name, help=text, add_help=False)  # listed in --help; dispatched above
    nat = sub.add_parser("build-native", help="build the native extension now (it also builds on first use)")
    nat.set_defaults(func=cmd_build_native)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
