"""`python -m harness coverage`: a campaign under coverage.py, restricted to torch's modules for
custom Functions (harness/torch_coverage.py)."""

import json
import re
import subprocess
import sys

import pytest

from harness import torch_coverage
from harness.cli import main
from harness.torch_coverage import FUNCTION_MODULES, FunctionModule, ModuleCoverage, torch_root, uncovered_text


def coverage_campaign(tmp_path, *options):
    """`python -m harness coverage` as a user runs it, eager path: (its stdout, the campaign folder,
    the --json numbers)."""
    out, numbers = tmp_path / "campaign", tmp_path / "coverage-numbers.json"
    done = subprocess.run([sys.executable, "-m", "harness", "coverage", "--paths", "eager", *options,
                           "--out", str(out), "--json", str(numbers)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout, out, json.loads(numbers.read_text())


def function_py_row(stdout: str) -> tuple[int, int, int, int]:
    """(covered lines, statements, covered branches, branches) of torch/autograd/function.py's row."""
    row = re.search(r"^torch/autograd/function\.py +(\d+)/(\d+) +[\d.]+% +(\d+)/(\d+) ", stdout, re.M)
    assert row is not None, stdout[-3000:]
    return tuple(map(int, row.groups()))  # type: ignore[return-value]


def executed(out, qualname: str) -> list[int]:
    """The lines of a function of torch/autograd/function.py that ran (coverage.py's JSON report)."""
    measured = json.loads((out / "coverage.json").read_text())["files"]
    function_py = next(data for name, data in measured.items() if name.endswith("torch/autograd/function.py"))
    return function_py["functions"][qualname]["executed_lines"]


def test_the_command_prints_the_coverage_of_the_campaign(tmp_path):
    """The default: the campaign in the measured process (--workers 0), a short budget."""
    stdout, out, numbers = coverage_campaign(tmp_path, "--budget", "20s")
    lines, statements, branches, of_branches = function_py_row(stdout)
    assert 0 < lines <= statements and 0 < branches <= of_branches
    assert "branches never taken" in stdout and "torch/autograd/function.py:" in stdout
    assert executed(out, "BackwardCFunction.apply")  # a backward ran through torch's node
    assert [m["path"] for m in numbers["modules"]] == [m.path for m in FUNCTION_MODULES]
    assert numbers["modules"][0]["covered_branches"] == branches
    assert (out / "uncovered.txt").read_text().startswith("torch/autograd/function.py: ")
    assert (out / "examples.jsonl").stat().st_size > 0 and (out / "report.md").exists()  # fuzz's own outputs
    assert json.loads((out / "summary.json").read_text())["examples"] > 0


def test_a_worker_process_is_measured(tmp_path):
    """With --workers 1 the parent applies no Function, so what ran of BackwardCFunction.apply ran in
    the worker: coverage.py's subprocess and _exit patches reached it. (--max-examples ends the worker
    before the budget does, which would kill it in the middle of an example and lose its data.)"""
    stdout, out, _ = coverage_campaign(tmp_path, "--workers", "1", "--max-examples", "30", "--budget", "90s")
    assert function_py_row(stdout)[2] > 0
    assert executed(out, "BackwardCFunction.apply")


def test_every_module_is_in_the_installed_torch_with_a_reason():
    for module in FUNCTION_MODULES:
        assert (torch_root() / module.path).is_file(), module.path
        assert len(module.why) > 40, module.path


def test_a_module_missing_from_torch_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setattr(torch_coverage, "FUNCTION_MODULES",
                        FUNCTION_MODULES + (FunctionModule("autograd/no_such_module.py", "a test"),))
    with pytest.raises(SystemExit, match=r"^error: torch at .* has no autograd/no_such_module.py; update "
                                         r"FUNCTION_MODULES in harness/torch_coverage.py"):
        main(["coverage", "--paths", "eager", "--budget", "1s", "--out", str(tmp_path / "c")])


def test_a_campaign_folder_is_not_measured_again(tmp_path):
    (tmp_path / "examples.jsonl").write_text("")
    with pytest.raises(SystemExit, match="holds a campaign already .* choose another --out"):
        main(["coverage", "--paths", "eager", "--budget", "1s", "--out", str(tmp_path)])


def test_a_bad_start_leaves_the_folder_usable(tmp_path):
    """A bad --paths is one sentence, and the same --out works afterwards (no stale data is kept). In a
    child process: coverage.py's patches (os._exit, fork) would stay in this one."""
    done = subprocess.run([sys.executable, "-m", "harness", "coverage", "--paths", "bogus", "--budget", "1s",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "error: unknown path 'bogus'" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    stale = tmp_path / torch_coverage.DATA_DIR / ".coverage.stale"
    stale.write_text("")
    torch_coverage.write_config(tmp_path)
    assert not stale.exists()


def test_compare_of_an_unmeasured_folder_is_one_sentence(tmp_path):
    with pytest.raises(SystemExit, match="holds no measured campaign"):
        torch_coverage.main(["compare", str(tmp_path), str(tmp_path)])


def test_missed_branches_are_grouped_by_function_with_their_file():
    entry = ModuleCoverage(FunctionModule("autograd/function.py", "a test"), 10, 5, 4, 1,
                           {"Function.apply": [(622, 627), (627, 628)], "once_differentiable.wrapper": [(654, -650)]})
    text = uncovered_text([entry], limit=1)
    assert text.splitlines() == ["torch/autograd/function.py: 3 branch(es) never taken",
                                 "  Function.apply: torch/autograd/function.py:622->627, 627->628",
                                 "  ... and 1 more function(s)"]
    assert "654->exit" in uncovered_text([entry], limit=None)


def test_the_side_by_side_script_measures_two_checkouts_at_once(tmp_path):
    """scripts/coverage_side_by_side.sh as the README shows it, this checkout on both sides (the noise
    measurement): both campaigns ran, and the table has both columns with a total row."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(["bash", str(root / "scripts/coverage_side_by_side.sh"), str(root), str(root), "eager", "15s",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"^base \(.*\): torch .* examples \(", done.stdout, re.M), done.stdout[-2000:]
    assert re.search(r"^cand \(.*\): torch .* examples \(", done.stdout, re.M), done.stdout[-2000:]
    assert "baseline" in done.stdout and "candidate" in done.stdout
    total = re.search(r"^all +(\d+)/(\d+) .*\| +(\d+)/(\d+) ", done.stdout, re.M)
    assert total is not None and int(total[1]) > 0 and int(total[3]) > 0, done.stdout[-2000:]


NESTED_HELPERS = {"_nested_map", "_iter_filter", "_unflatten", "_iter_jit_values", "_iter_tensors",
                  "_iter_tensors_permissive", "_iter_None_tensors", "_map_tensor_data"}


def test_the_nested_structure_helpers_of_function_py_have_no_working_caller():
    """Why no axis reaches function.py's nested-structure helpers (docs/coverage.md): they and the
    helpers made from them are read only by each other and by NestedIOFunction, which torch 2.13
    cannot call (its _do_forward calls a super()._do_forward that Function no longer has). Should a
    torch release use them elsewhere, or make NestedIOFunction work, this fails, and an axis can
    reach them."""
    import ast

    import torch
    from torch.autograd.function import NestedIOFunction

    tree = ast.parse((torch_root() / "autograd" / "function.py").read_text())
    readers = set()
    for node in tree.body:
        name = getattr(node, "name", None) or next(
            (t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)), None)
        if any(isinstance(n, ast.Name) and n.id in NESTED_HELPERS for n in ast.walk(node)):
            readers.add(name)
    assert "NestedIOFunction" in readers and readers <= NESTED_HELPERS | {"NestedIOFunction"}, readers
    # and no other module of torch imports them, but torch's own JIT test helpers (a test utility, not a
    # path a Function takes; Dynamo's trace_rules names some of them in strings, which import nothing)
    importers = set()
    for path in torch_root().rglob("*.py"):
        text = path.read_text(errors="replace")
        if "autograd.function" in text and path.name != "function.py":
            importers |= {str(path.relative_to(torch_root())) for node in ast.walk(ast.parse(text))
                          if isinstance(node, ast.ImportFrom) and node.module == "torch.autograd.function"
                          and {a.name for a in node.names} & (NESTED_HELPERS | {"NestedIOFunction"})}
    assert importers <= {"testing/_internal/jit_utils.py"}, importers

    class Doubled(NestedIOFunction):
        def forward_extended(self, x):
            return x * 2

        def backward_extended(self, g):
            return g * 2

    with pytest.raises(AttributeError, match="'super' object has no attribute '_do_forward'"):
        with pytest.warns(DeprecationWarning):
            Doubled()(torch.ones(2, requires_grad=True))
