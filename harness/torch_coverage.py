"""Branch coverage of torch's own code for custom Functions, measured over a campaign.

`python -m harness coverage` runs a fuzz campaign under coverage.py and reports, per module of
FUNCTION_MODULES, the lines and branches of torch that the campaign ran, and every branch it did
not (docs/coverage.md, "torch's conditions for custom Functions"). With --workers N the workers are measured
too: coverage.py's `patch = subprocess` hands the configuration to every Python child (through the
`.pth` file coverage installs), `patch = _exit` saves a worker's data at its `os._exit`, and
`patch = fork` a forked shrinking candidate's. A worker killed by SIGKILL loses all its data: a hang,
and a worker still in an example at the budget's end (harness.workers kills it then), which on the
compiled and dynamo paths, seconds an example, is the rule. So `coverage` runs the campaign in its own
process unless told otherwise (--workers 0), where nothing is lost.

`python -m harness.torch_coverage config DIR | report DIR | compare DIR_A DIR_B` are the pieces
scripts/coverage_side_by_side.sh uses to measure another checkout's `fuzz` the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class FunctionModule:
    """A torch module (its path relative to the torch package) and why it is measured. scope:
    the functions and classes measured (a name counts every function nested in it), where the
    rest of the file has nothing to do with custom Functions; empty: the whole file."""

    path: str
    why: str
    scope: tuple[str, ...] = ()


#: The one list of what `coverage` measures. Read from the installed torch 2.13.0.
FUNCTION_MODULES: tuple[FunctionModule, ...] = (
    FunctionModule("autograd/function.py",
                   "the Python side of every custom Function: FunctionCtx (save_for_backward, mark_dirty, "
                   "set_materialize_grads, ...), Function.apply (setup_context, keyword arguments, the "
                   "functorch dispatch), BackwardCFunction (backward/vjp choice), once_differentiable"),
    FunctionModule("_functorch/autograd_function.py",
                   "custom Functions under torch.func (custom_function_call, its grad, vmap and "
                   "generate_vmap_rule rules) and AutogradFunctionApply, the op Dynamo traces a Function into"),
    FunctionModule("_dynamo/variables/higher_order_ops.py",
                   "Dynamo's tracing of a Function's forward and backward into autograd_function_apply; the "
                   "rest of this 6,000-line file is other higher-order ops",
                   ("AutogradFunctionApplyVariable", "CustomFunctionHigherOrderOperatorVariable")),
    FunctionModule("_dynamo/variables/misc.py",
                   "Dynamo's view of a Function class and of its ctx (apply, ctx attributes, saved "
                   "tensors, needs_input_grad, mark_* calls); the rest of the file is unrelated objects",
                   ("AutogradFunctionVariable", "AutogradFunctionContextVariable")),
    FunctionModule("_dynamo/compiled_autograd.py",
                   "compiled autograd, which proxies every custom Function's backward node into its graph "
                   "(proxy_call_backward, boxed_grads_call, the AOT backward splice); the whole file: the "
                   "Function parts are spread through its tracer"),
    FunctionModule("_dynamo/external_utils.py",
                   "what compiled autograd's graph calls for a custom Function at run time: "
                   "FakeBackwardCFunction and call_backward (the ctx backward sees)",
                   ("FakeBackwardCFunction", "call_backward")),
    FunctionModule("_library/autograd.py",
                   "torch.library.register_autograd: the autograd.Function it builds around a custom op"),
    FunctionModule("_library/custom_ops.py",
                   "torch.library.custom_op, the other way users define an op with its own backward; the "
                   "whole file"),
    FunctionModule("autograd/graph.py",
                   "the hooks a Function's node and saved tensors meet: Node.register_hook / register_prehook, "
                   "saved_tensors_hooks, disable_saved_tensors_hooks, register_multi_grad_hook",
                   ("Node", "saved_tensors_hooks", "disable_saved_tensors_hooks", "register_multi_grad_hook",
                    "_MultiHandle")),
)

#: in a campaign folder: the combined data, coverage.py's JSON report, the full list of missed branches
DATA_DIR, CONFIG_NAME, JSON_NAME, UNCOVERED_NAME = "coverage-data", "coveragerc", "coverage.json", "uncovered.txt"
#: functions with missed branches printed per module (all of them are in uncovered.txt)
SHOWN_PER_MODULE = 8


class CoverageSetupError(RuntimeError):
    """Coverage cannot be measured here (a module of FUNCTION_MODULES missing from this torch)."""


def torch_root() -> Path:
    """The installed torch package's folder, found without importing torch (so that coverage can start
    before torch's modules run their module-level code)."""
    found = importlib.util.find_spec("torch")
    if found is None or found.origin is None:
        raise CoverageSetupError("torch is not installed in this interpreter; install torch==2.13.0 first.")
    return Path(found.origin).resolve().parent


def module_files() -> dict[str, FunctionModule]:
    """Absolute path -> its FUNCTION_MODULES entry; one sentence if this torch lacks one."""
    root = torch_root()
    files = {str(root / m.path): m for m in FUNCTION_MODULES}
    missing = [m.path for m in FUNCTION_MODULES if not (root / m.path).is_file()]
    if missing:
        raise CoverageSetupError(f"torch at {root} has no {', '.join(missing)}; update FUNCTION_MODULES in "
                                 f"harness/torch_coverage.py for this torch release.")
    return files


def function_module_files() -> frozenset[str]:
    """The absolute file names of FUNCTION_MODULES in the installed torch, as code objects name
    them in co_filename (HypoFuzz's coverage collector is told to trace these only:
    harness/fuzz_target.py)."""
    return frozenset(module_files())


def write_config(folder: Path) -> Path:
    """A coverage.py configuration measuring FUNCTION_MODULES with branch coverage into
    folder/DATA_DIR, in this process and every Python process it starts."""
    data = folder / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    for stale in data.glob(".coverage*"):  # of a start that failed before its campaign (a bad --paths)
        stale.unlink()
    config = folder / CONFIG_NAME
    include = "".join(f"\n    {path}" for path in module_files())
    config.write_text(f"[run]\nbranch = True\nparallel = True\ndata_file = {data.resolve() / '.coverage'}\n"
                      f"include ={include}\npatch =\n    subprocess\n    _exit\n    fork\n"
                      "disable_warnings =\n    no-data-collected\n    module-not-measured\n")
    return config


@contextlib.contextmanager
def measuring(folder: Path) -> Iterator[None]:
    """Coverage of FUNCTION_MODULES in this process and its children while inside; the data saved
    in folder/DATA_DIR. The environment variable that hands the configuration to children is
    restored afterwards."""
    import coverage

    config = write_config(folder)
    before = os.environ.get("COVERAGE_PROCESS_CONFIG")
    cov = coverage.Coverage(config_file=str(config))
    cov.start()
    try:
        yield
    finally:
        cov.stop()
        cov.save()
        if before is None:
            os.environ.pop("COVERAGE_PROCESS_CONFIG", None)
        else:
            os.environ["COVERAGE_PROCESS_CONFIG"] = before


@dataclass
class ModuleCoverage:
    """What a campaign ran of one FUNCTION_MODULES entry (within its scope): the statements and
    branches of its functions' bodies. Module-level statements are left out: every import of torch
    runs them, whatever the campaign does."""

    module: FunctionModule
    statements: int = 0
    covered_lines: int = 0
    branches: int = 0
    covered_branches: int = 0
    #: function qualname -> its missed branches (from line, to line; a negative "to" leaves the function)
    missed: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def line_share(self) -> float:
        return self.covered_lines / self.statements if self.statements else 0.0

    @property
    def branch_share(self) -> float:
        return self.covered_branches / self.branches if self.branches else 0.0

    def as_json(self) -> dict[str, Any]:
        return {"path": self.module.path, "scope": list(self.module.scope), "statements": self.statements,
                "covered_lines": self.covered_lines, "line_share": round(self.line_share, 4),
                "branches": self.branches, "covered_branches": self.covered_branches,
                "branch_share": round(self.branch_share, 4),
                "missed_branches": {name: [list(b) for b in bs] for name, bs in self.missed.items()}}


def _in_scope(qualname: str, scope: tuple[str, ...]) -> bool:
    return not scope or any(qualname == s or qualname.startswith(s + ".") for s in scope)


def analyse(folder: Path) -> list[ModuleCoverage]:
    """Combine folder/DATA_DIR (this process's and every worker's data), write coverage.py's JSON
    report to folder/JSON_NAME and the missed branches to folder/UNCOVERED_NAME; one entry per
    FUNCTION_MODULES module, in its order (a module nothing ran counts as 0 of its statements)."""
    import coverage

    files = module_files()
    cov = coverage.Coverage(config_file=str(folder / CONFIG_NAME))
    cov.combine([str(folder / DATA_DIR)], keep=True)
    with contextlib.redirect_stdout(None):  # coverage.py prints "Wrote JSON report to ..."
        cov.json_report(morfs=list(files), outfile=str(folder / JSON_NAME), ignore_errors=True)
    reported = json.loads((folder / JSON_NAME).read_text())["files"]
    by_path = {str(Path(name).resolve()): data for name, data in reported.items()}
    result = []
    for path, module in files.items():
        entry = ModuleCoverage(module)
        for qualname, data in by_path.get(path, {}).get("functions", {}).items():
            if not qualname or not _in_scope(qualname, module.scope):
                continue  # "" is the module level, which every import of torch runs
            summary = data["summary"]
            entry.statements += summary["num_statements"]
            entry.covered_lines += summary["covered_lines"]
            entry.branches += summary["num_branches"]
            entry.covered_branches += summary["covered_branches"]
            if data["missing_branches"]:
                entry.missed[qualname or "<module>"] = sorted(tuple(b) for b in data["missing_branches"])
        result.append(entry)
    (folder / UNCOVERED_NAME).write_text(uncovered_text(result, limit=None))
    return result


def _branches(branches: list[tuple[int, int]]) -> str:
    return ", ".join(f"{start}->{'exit' if end < 0 else end}" for start, end in branches)


def uncovered_text(result: list[ModuleCoverage], *, limit: int | None = SHOWN_PER_MODULE) -> str:
    """The missed branches grouped by function, each line naming its file (file:line->line, ...);
    with a limit, at most `limit` functions per module and 4 branches per function."""
    lines = []
    for entry in result:
        path = f"torch/{entry.module.path}"
        lines.append(f"{path}: {sum(map(len, entry.missed.values()))} branch(es) never taken")
        functions = list(entry.missed.items())
        for name, branches in functions if limit is None else functions[:limit]:
            shown = branches if limit is None else branches[:4]
            lines.append(f"  {name}: {path}:{_branches(shown)}"
                         + (f" and {len(branches) - len(shown)} more" if len(shown) < len(branches) else ""))
        if limit is not None and len(functions) > limit:
            lines.append(f"  ... and {len(functions) - limit} more function(s)")
    return "\n".join(lines) + "\n"


def table(result: list[ModuleCoverage], other: list[ModuleCoverage] | None = None,
          names: tuple[str, str] = ("", "")) -> str:
    """Line and branch coverage per module; with `other`, a second column set beside it."""
    width = max(len(e.module.path) + (11 if e.module.scope else 0) for e in result) + 7

    def cells(e: ModuleCoverage) -> str:
        return (f"{e.covered_lines:>5}/{e.statements:<5} {100 * e.line_share:5.1f}%  "
                f"{e.covered_branches:>5}/{e.branches:<5} {100 * e.branch_share:5.1f}%")

    head = f"{'lines':>18}  {'branches':>18}"
    lines = [f"{'module':<{width}} {head}" + (f"   |{head}" if other else "")]
    if other:
        lines.insert(0, f"{'':<{width}} {names[0]:^38}   | {names[1]:^38}")
    for k, e in enumerate(result):
        label = f"torch/{e.module.path}" + (" (in part)" if e.module.scope else "")
        lines.append(f"{label:<{width}} {cells(e)}" + (f"   | {cells(other[k])}" if other else ""))
    totals = [_total(result)] + ([_total(other)] if other else [])
    lines.append(f"{'all':<{width}} " + "   | ".join(cells(t) for t in totals))
    return "\n".join(lines)


def _total(result: list[ModuleCoverage]) -> ModuleCoverage:
    total = ModuleCoverage(FunctionModule("all", "the sum"))
    for e in result:
        total.statements += e.statements
        total.covered_lines += e.covered_lines
        total.branches += e.branches
        total.covered_branches += e.covered_branches
    return total


def as_json(result: list[ModuleCoverage]) -> dict[str, Any]:
    total = _total(result)
    return {"modules": [e.as_json() for e in result],
            "total": {k: v for k, v in total.as_json().items() if k not in ("path", "scope", "missed_branches")}}


def report(folder: Path, json_file: str | None = None) -> list[ModuleCoverage]:
    """Analyse the folder's data and print the table and the first missed branches of each module."""
    result = analyse(folder)
    print("\ncoverage of torch's custom-Function modules (branch coverage; harness/torch_coverage.py):")
    print(table(result))
    print("\nbranches never taken (the first of each module; all of them: "
          f"{folder / UNCOVERED_NAME}):")
    print(uncovered_text(result), end="")
    if json_file:
        Path(json_file).write_text(json.dumps(as_json(result), indent=2) + "\n")
        print(f"coverage numbers written to {json_file}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.torch_coverage", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("config", help="write DIR/coveragerc and print its path").add_argument("folder", metavar="DIR")
    rep = sub.add_parser("report", help="combine DIR's data, print the table and the missed branches")
    rep.add_argument("folder", metavar="DIR")
    rep.add_argument("--json", help="write the numbers to this file")
    cmp = sub.add_parser("compare", help="the tables of two measured folders side by side")
    cmp.add_argument("first", metavar="DIR_A")
    cmp.add_argument("second", metavar="DIR_B")
    cmp.add_argument("--names", default="A,B", help="the two columns' names (default A,B)")
    args = parser.parse_args(argv)
    try:
        if args.command == "config":
            print(write_config(Path(args.folder)))
        elif args.command == "report":
            report(Path(args.folder), args.json)
        else:
            for folder in (args.first, args.second):
                if not (Path(folder) / CONFIG_NAME).is_file():
                    raise CoverageSetupError(f"{folder} holds no measured campaign ({CONFIG_NAME} is missing); "
                                             f"measure one with `python -m harness coverage --out {folder}`.")
            first, second = analyse(Path(args.first)), analyse(Path(args.second))
            a, _, b = args.names.partition(",")
            print(table(first, second, (a, b)))
    except CoverageSetupError as e:
        raise SystemExit(f"error: {e}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
