"""`bench` and `compare`: entry points the CLI wires up (argument parsing only here).

    bench_main(["--paths", "eager,owned,borrowed", "--scenarios", "seed,sweep,graph",
                "--inputs", "0,8,24,25,32", "--json", "out.json", "--plot", "out.png",
                "--check", "BASELINE.json", "--band", "0.02"])
    compare_main(["A.json", "B.json", "--attribute"])
    compare_main(["R.json", "--attribute", "--paths", "owned,borrowed"])

Exit status: 0 fine; 1 a gate failed or a region raised; 2 unusable input or
environment (one line on stderr says what and how to fix it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from harness.counting import report as rep
from harness.counting.callgrind import (
    DEFAULT_CHUNKS,
    DEFAULT_REPS,
    DEFAULT_WARMUP,
    CountingError,
    measure,
)
from harness.counting.cases import (
    DEFAULT_PATHS,
    DEFAULT_SWEEP_INPUTS,
    PATHS,
    PHASES,
    CaseError,
    cases_for,
    parse_inputs,
    parse_names,
    scenario_names,
)

DEFAULT_SCENARIOS = ("seed", "sweep", "graph")
_SELECTION = ("paths", "scenarios", "inputs", "phases", "reps", "warmup", "chunks")


def run_bench(paths: Sequence[str] = DEFAULT_PATHS, scenarios: Sequence[str] = DEFAULT_SCENARIOS,
              inputs: Sequence[int] | None = None, phases: Sequence[str] = PHASES, *,
              reps: int = DEFAULT_REPS, warmup: int = DEFAULT_WARMUP, chunks: int = DEFAULT_CHUNKS,
              timeout: float | None = None, keep_dir: str | None = None,
              functions: bool = True) -> dict[str, Any]:
    """Count the selected scenarios in one callgrind process; returns the report dict."""
    sweep_inputs = list(DEFAULT_SWEEP_INPUTS if inputs is None else inputs)
    cases = cases_for(scenarios, sweep_inputs)
    measurement = measure(cases, paths, phases, reps=reps, warmup=warmup, chunks=chunks,
                          timeout=timeout, keep_dir=keep_dir, functions=functions)
    report = measurement.to_plain()
    report["selection"] = {"paths": list(paths), "scenarios": list(scenarios),
                           "inputs": sweep_inputs, "phases": list(phases), "reps": reps,
                           "warmup": warmup, "chunks": chunks}
    return report


def _bench_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m harness bench",
        description="Count instructions per Function apply (forward) and backward with callgrind.")
    p.add_argument("--paths", help=f"comma list of {', '.join(PATHS)} (default: "
                                   f"{','.join(DEFAULT_PATHS)}; compiled counts the backward only)")
    p.add_argument("--scenarios", help=f"comma list of {', '.join(scenario_names())} "
                                       f"(default: {','.join(DEFAULT_SCENARIOS)})")
    p.add_argument("--inputs", help="sweep input counts, e.g. '0,8,24,25,32' or '0-40' (default: 0-40)")
    p.add_argument("--phases", help=f"comma list of {', '.join(PHASES)} (default: both)")
    p.add_argument("--reps", type=int, help=f"counted repetitions per region (default: {DEFAULT_REPS})")
    p.add_argument("--warmup", type=int, help=f"warm-up repetitions, at least --reps (default: {DEFAULT_WARMUP})")
    p.add_argument("--chunks", type=int, help=f"the counted reps run in this many chunks; the median "
                                              f"chunk is reported (default: {DEFAULT_CHUNKS})")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the workloads' tensors live (default: cpu); with cuda, callgrind "
                        "still counts host-side instructions only: launch overhead, not GPU work")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="plot instructions vs input count per path")
    p.add_argument("--check", metavar="BASELINE", nargs="?", const="",
                   help="gate against a baseline report (default: the stored one for this torch); "
                        "without a selection of its own, the run repeats the baseline's selection")
    p.add_argument("--band", type=float, default=rep.DEFAULT_BAND,
                   help="relative noise band for --check (default: %(default)s)")
    p.add_argument("--floor", type=int, default=rep.DEFAULT_FLOOR,
                   help="changes of at most this many instructions never fail --check "
                        "(default: %(default)s)")
    p.add_argument("--from", dest="from_file", metavar="FILE",
                   help="use a saved report instead of running callgrind")
    p.add_argument("--keep-dumps", metavar="DIR", help="keep the worker spec, log and callgrind dumps in DIR")
    p.add_argument("--timeout", type=float, help="seconds before the callgrind run is abandoned")
    p.add_argument("--no-functions", action="store_true",
                   help="leave out each row's per-function costs (what compare --attribute reads; "
                        "they make a report about 30 KB per row)")
    return p


def bench_main(argv: Sequence[str] | None = None) -> int:
    args = _bench_parser().parse_args(argv)
    try:
        _use_device(args)
        baseline, baseline_file = _baseline(args)
        if args.from_file:
            current = rep.load_report(args.from_file)
        else:
            current = run_bench(**_selection(args, baseline), timeout=args.timeout,
                                keep_dir=args.keep_dumps, functions=not args.no_functions)
            if args.device == "cuda":
                current["device"], current["counted"] = "cuda", HOST_SIDE_NOTE
    except (CountingError, CaseError, rep.ReportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if current.get("counted"):
        print(f"note: {current['counted']}")
    print(rep.render_table(current))
    if args.json:
        rep.save_report(current, args.json)
        print(f"wrote {args.json}")
    status = 1 if any("error" in r for r in current["results"]) else 0
    if args.plot:
        try:
            rep.plot(current, args.plot)
            print(f"wrote {args.plot}")
        except rep.ReportError as e:  # the report and the gate still count
            print(f"error: {e}", file=sys.stderr)
            status = 2
    if baseline is not None:
        result = rep.check(baseline, current, args.band, args.floor)
        print(rep.render_check(result))
        if not result.passed:
            print(f"Refreshed baseline, per-function costs left out (save it as {baseline_file} "
                  "if the change is intended; --json writes it whole):")
            print(rep.dumps(rep.without_functions(result.refreshed)), end="")
            status = 1
    return status


HOST_SIDE_NOTE = ("tensors on CUDA: these are host-side instructions of apply and backward "
                  "(Python, autograd and kernel launches); callgrind does not see the GPU")


def _use_device(args: argparse.Namespace) -> None:
    """--device cuda: the callgrind worker makes its leaves on CUDA (through the environment
    it inherits); the stored baselines are CPU counts, so --check needs a file of its own."""
    if args.device == "cpu":
        return
    from harness.devices import cuda_unavailable_reason

    why = cuda_unavailable_reason()
    if why is not None:
        raise CountingError(why)
    if args.check == "":
        raise CountingError("the stored baselines count CPU tensors; with --device cuda pass "
                            "--check FILE, a report made with --device cuda")
    import os

    from harness.counting.workloads import DEVICE_ENV
    os.environ[DEVICE_ENV] = "cuda"


def _baseline(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    if args.check is None:
        return None, ""
    path = args.check
    if not path:
        import torch

        path = str(rep.baseline_path(torch.__version__))
        if not rep.baseline_path(torch.__version__).exists():
            raise rep.ReportError(f"there is no stored baseline for torch {torch.__version__} "
                                  f"({path}); make it with `python -m harness bench --json {path}`")
    return rep.load_report(path), path


def _selection(args: argparse.Namespace, baseline: dict[str, Any] | None) -> dict[str, Any]:
    """Explicit options win; otherwise a baseline's own selection (like for like); else defaults."""
    explicit = any(getattr(args, k) is not None for k in _SELECTION)
    stored = (baseline or {}).get("selection") if not explicit else None
    if stored:
        return {k: stored[k] for k in _SELECTION if k in stored}
    return {
        "paths": parse_names(args.paths, PATHS, "path") if args.paths else list(DEFAULT_PATHS),
        "scenarios": (parse_names(args.scenarios, scenario_names(), "scenario") if args.scenarios
                      else list(DEFAULT_SCENARIOS)),
        "inputs": parse_inputs(args.inputs) if args.inputs else None,
        "phases": parse_names(args.phases, PHASES, "phase") if args.phases else list(PHASES),
        "reps": DEFAULT_REPS if args.reps is None else args.reps,
        "warmup": DEFAULT_WARMUP if args.warmup is None else args.warmup,
        "chunks": DEFAULT_CHUNKS if args.chunks is None else args.chunks,
    }


def _compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m harness compare",
        description="Per-(scenario, case, path, phase, inputs) instruction deltas between two bench "
                    "reports, or between two paths of one report (--paths), and with --attribute "
                    "the functions that account for each delta.")
    p.add_argument("old", metavar="A.json")
    p.add_argument("new", metavar="B.json", nargs="?",
                   help="the report to compare with (default: A.json itself, with --paths P,Q)")
    p.add_argument("--paths", metavar="P[,Q]",
                   help="compare only path P; or path P of A with path Q of B")
    p.add_argument("--attribute", action="store_true",
                   help="list, per compared row, the functions that account for its delta")
    p.add_argument("--coverage", type=float, default=rep.DEFAULT_COVERAGE,
                   help="with --attribute: name functions until they account for this share of "
                        "the instructions that moved (default: %(default)s)")
    p.add_argument("--top", type=int, default=rep.DEFAULT_TOP,
                   help="with --attribute: at most this many functions per row (default: %(default)s)")
    p.add_argument("--full-names", action="store_true",
                   help="with --attribute: compare functions by their full signature (default: by "
                        "name without template arguments and parameters, so instantiations and "
                        "overloads pair up)")
    p.add_argument("--band", type=float,
                   help="also gate: exit 1 when a count moves outside this relative band (e.g. 0.02)")
    p.add_argument("--floor", type=int, default=rep.DEFAULT_FLOOR,
                   help="with --band: changes of at most this many instructions pass (default: %(default)s)")
    return p


def compare_main(argv: Sequence[str] | None = None) -> int:
    args = _compare_parser().parse_args(argv)
    try:
        old, new, old_name, new_name = _compared(args)
    except (rep.ReportError, CaseError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    new_file = args.new or args.old
    print(f"{old_name}: {args.old} (torch {old.get('torch', '?')})\n"
          f"{new_name}: {new_file} (torch {new.get('torch', '?')})")
    print(rep.render_compare(rep.compare(old, new), old_name, new_name, args.band, args.floor))
    if args.attribute:
        attributions, notes = rep.attribute_reports(old, new, args.coverage, args.top,
                                                          args.full_names)
        print()
        print(rep.render_attribution(attributions, old_name, new_name))
        for note in dict.fromkeys(notes):
            print(f"not attributed: {note}")
        if not attributions:
            print("error: no row could be attributed", file=sys.stderr)
            return 2
    if args.band is None:
        return 0
    result = rep.check(old, new, args.band, args.floor)
    print(rep.render_check(result))
    return 0 if result.passed else 1


def _compared(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any], str, str]:
    """(old report, new report, their column names) after --paths."""
    if not 0 <= args.coverage <= 1 or args.top < 1:
        raise CaseError(f"--coverage {args.coverage} --top {args.top}: give a share between 0 and 1 "
                        "and at least 1 function (e.g. --coverage 0.9 --top 25)")
    old = rep.load_report(args.old)
    new = rep.load_report(args.new) if args.new else old
    names = parse_names(args.paths, PATHS, "path") if args.paths else []
    if len(names) > 2:
        raise CaseError(f"--paths {args.paths!r}: give one path, or two (P,Q: P of A against Q of B)")
    if args.new is None and len(names) != 2:
        raise CaseError("with one report, name the two paths to compare: --paths P,Q "
                        "(e.g. --paths owned,borrowed)")
    if len(names) == 1:
        return rep.select_paths(old, names[0]), rep.select_paths(new, names[0]), "A", "B"
    if len(names) == 2:
        shown = f"{names[0]}->{names[1]}"
        old_name, new_name = ("A", "B") if args.new else (names[0], names[1])
        return (rep.select_paths(old, names[0], shown), rep.select_paths(new, names[1], shown),
                old_name, new_name)
    return old, new, "A", "B"


__all__ = ["DEFAULT_SCENARIOS", "bench_main", "compare_main", "run_bench"]
