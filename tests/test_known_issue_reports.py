"""The upstream-ready reports of the known torch issues: the reduced reproducers they embed,
`known --measure` and `known --report` run as a user runs them, and what a report concludes from
the measurements (harness/known_issues/reports.py)."""

import ast
import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.known_issues import KNOWN_ISSUES, reports
from harness.known_issues.entry import KINDS

ROOT = Path(__file__).resolve().parent.parent


def _entry(issue_id):
    return next(k for k in KNOWN_ISSUES if k.id == issue_id)


def _harness(*args, cwd):
    """`python -m harness ...` in a fresh process, from another folder, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=900, check=False)


@pytest.mark.parametrize("issue", KNOWN_ISSUES, ids=lambda k: k.id)
def test_reduced_reproducer_is_short_plain_torch_with_a_title(issue):
    """What a maintainer reads in a minute: under 40 lines, nothing imported but torch and Python's
    standard library, a docstring whose first line states the wrong behaviour, a usage line (if
    any) that `known --measure` understands, and the expected/observed it prints."""
    path = reports.reduced_reproducer(issue)
    assert path.exists(), f"{issue.id}: write its reduced reproducer {path.relative_to(ROOT)}"
    text = path.read_text()
    assert len(text.splitlines()) < 40, f"{path.name}: {len(text.splitlines())} lines"
    tree = ast.parse(text)
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "torch" in imported and imported - {"torch"} <= sys.stdlib_module_names, imported
    assert 20 <= len(reports.report_title(path)) <= 160, reports.report_title(path)
    docstring = (ast.get_docstring(tree) or "").splitlines()
    usages = [line for line in docstring if line.startswith("Usage:")]
    assert len(usages) <= 1 and (not usages or reports.argument_sets(path) != [()]), usages
    assert 'print(f"expected: ' in text and "observed: " in text


def test_argument_sets_follow_the_usage_line(tmp_path):
    def sets(usage):
        path = tmp_path / "repro.py"
        path.write_text(f'"""A title long enough to state a bug.\n{usage}"""\nimport torch\n')
        return reports.argument_sets(path)

    assert sets("") == [()]
    assert sets("Usage: python repro.py [ca]") == [(), ("ca",)]
    assert sets("Usage: python repro.py [capture|eager|inductor]") == [("capture",), ("eager",), ("inductor",)]
    assert sets("Usage: python repro.py [aot_eager|eager] [ca]") == [
        ("aot_eager",), ("eager",), ("aot_eager", "ca"), ("eager", "ca")]


def _store(tmp_path, records: dict[str, dict[str, dict[str, str]]]) -> Path:
    """A measurements store of made-up runs: {entry: {release: {argument label: state}}}, each
    for the entry's current reduced reproducer."""
    data = {"releases": {r: {"torch": r + "+cpu", "date": "2026-12-01", "collect_env": f"PyTorch version: {r}+cpu"}
                         for r in reports.RELEASES}, "entries": {}}
    for issue_id, by_release in records.items():
        digest = reports.digest(reports.reduced_reproducer(_entry(issue_id)))
        data["entries"][issue_id] = {
            release: {"sha256": digest, "date": "2026-12-01", "runs": {
                name: {"state": state, "expected": "eager's value", "observed": f"{state} on {release}",
                       "seconds": 1.0, "error": ""} for name, state in runs.items()}}
            for release, runs in by_release.items()}
    path = tmp_path / "measurements.json"
    path.write_text(json.dumps(data))
    return path


def test_readiness_and_the_table_follow_the_measurements(tmp_path):
    """Fakes beside the real runs of the tests below: made-up measurements decide what a report
    says. Ready to file: no upstream report, not a limitation, reproduced on the newest release."""
    both = {"2.13.0": "reproduces", "2.15.0": "reproduces"}
    store = _store(tmp_path, {
        "fwad-view-drops-later-tangents": {r: {"no arguments": s} for r, s in both.items()},
        "dynamo-no-inputs-needs-input-grad-none": {"2.13.0": {"aot_eager": "reproduces"},
                                                   "2.15.0": {"aot_eager": "does not reproduce"}},
        "func-jvp-zero-dim-scalar-tangent-dtype": {r: {"no arguments": s} for r, s in both.items()},
        "dynamo-function-class-attribute": {r: {"aot_eager": s} for r, s in both.items()},
        "ca-retain-grad-none-gradient-segfault": {"2.15.0": {"capture": "crashes", "eager": "fails otherwise"}},
    })
    data = reports.load_measurements(store)
    assert reports.readiness(_entry("fwad-view-drops-later-tangents"), data) == "ready to file"
    assert reports.readiness(_entry("ca-retain-grad-none-gradient-segfault"), data) == "ready to file"
    assert reports.readiness(_entry("dynamo-no-inputs-needs-input-grad-none"), data) == "fixed in torch 2.15.0"
    assert reports.readiness(_entry("func-jvp-zero-dim-scalar-tangent-dtype"), data) == "already reported upstream"
    assert reports.readiness(_entry("dynamo-function-class-attribute"), data).startswith("a limitation")
    assert reports.readiness(_entry("eager-dirty-view-not-first-input"), data) == "not measured on torch 2.15.0"
    text = reports.report(_entry("ca-retain-grad-none-gradient-segfault"), data)
    assert "| 2.15.0 | **crashes** | fails otherwise | not measured | not measured |" in text, text
    assert "| 2.13.0 | not measured |" in text and "observed: crashes on 2.15.0" in text
    assert "PyTorch version: 2.15.0+cpu" in text  # the Versions section: the release it was observed on
    # a record of another version of the reproducer is not quoted
    stale = json.loads(store.read_text())
    stale["entries"]["fwad-view-drops-later-tangents"]["2.15.0"]["sha256"] = "0" * 64
    assert reports.readiness(_entry("fwad-view-drops-later-tangents"), stale) == "not measured on torch 2.15.0"
    assert "2.15.0" not in reports.measured_runs(_entry("fwad-view-drops-later-tangents"), stale)


def test_known_report_for_one_entry_and_for_all_as_a_user_runs_it(tmp_path):
    """`known --report ID --out DIR` writes that entry's report and the index; `--report all` one
    per entry. A report has the template's sections, its title is the reproducer's first docstring
    line and it embeds the reproducer itself, whole."""
    store = _store(tmp_path, {"fwad-view-drops-later-tangents": {"2.15.0": {"no arguments": "reproduces"}}})
    one = _harness("known", "--report", "fwad-view-drops-later-tangents", "--out", "one", "--measurements",
                   str(store), cwd=tmp_path)
    assert one.returncode == 0, one.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["README.md", "fwad-view-drops-later-tangents.md"]
    issue = _entry("fwad-view-drops-later-tangents")
    path = reports.reduced_reproducer(issue)
    text = (tmp_path / "one" / f"{issue.id}.md").read_text()
    assert text.startswith(f"# {reports.report_title(path)}\n")
    assert "### 🐛 Describe the bug" in text and "### Versions" in text
    assert f"```python\n{path.read_text()}```" in text
    assert "expected: eager's value\nobserved: reproduces on 2.15.0" in text and "| 2.15.0 | **reproduces** |" in text

    every = _harness("known", "--report", "all", "--out", "all", "--measurements", str(store), cwd=tmp_path)
    assert every.returncode == 0, every.stderr[-2000:]
    written = {p.name for p in (tmp_path / "all").iterdir()}
    assert written == {f"{k.id}.md" for k in KNOWN_ISSUES} | {"README.md"}
    index = (tmp_path / "all" / "README.md").read_text()
    kinds = collections.Counter(k.kind for k in KNOWN_ISSUES)
    assert f"{len(KNOWN_ISSUES)} entries. By kind: " + ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k]) in index
    assert "Ready to file: 1." in index and f"({issue.id}.md) | {issue.kind} |" in index

    unknown = _harness("known", "--report", "no-such-entry", "--out", "x", cwd=tmp_path)
    assert unknown.returncode == 2 and "no known issue no-such-entry" in unknown.stdout


def test_known_measure_runs_the_reduced_reproducer_and_the_report_quotes_it(tmp_path):
    """A real measurement: `known --measure ID` runs the entry's reduced reproducer under this
    Python, stores what it printed with the release, its hash and collect_env's output; a second
    `--measure` skips it (same reproducer), and the report quotes the stored run."""
    issue = _entry("func-jvp-zero-dim-scalar-tangent-dtype")
    store = tmp_path / "store.json"
    measured = _harness("known", "--measure", issue.id, "--measurements", str(store), cwd=tmp_path)
    assert measured.returncode == 0, measured.stderr[-2000:]
    data = reports.load_measurements(store)
    release = reports.RELEASES[0] if "2.13.0" in data["releases"] else next(iter(data["releases"]))
    record = data["entries"][issue.id][release]
    assert record["sha256"] == reports.digest(reports.reduced_reproducer(issue))
    run = record["runs"]["no arguments"]
    assert run["state"] == ("reproduces" if issue.affects_installed_torch() else "does not reproduce"), run
    assert run["expected"] == "tangent dtype torch.float32" and run["observed"].startswith("tangent dtype torch.")
    assert "PyTorch version:" in data["releases"][release]["collect_env"]
    again = _harness("known", "--measure", issue.id, "--measurements", str(store), cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == "", again.stdout  # nothing to measure again
    _harness("known", "--report", issue.id, "--out", "out", "--measurements", str(store), cwd=tmp_path)
    text = (tmp_path / "out" / f"{issue.id}.md").read_text()
    assert f"expected: {run['expected']}\nobserved: {run['observed']}" in text


def test_stored_measurements_are_of_the_current_reproducers():
    """A stored run of another version of a reduced reproducer is never quoted (reports leave it
    out), and it is stale data: measure the changed reproducer again."""
    data = reports.load_measurements()
    stale = sorted(f"{issue_id} on {release}" for issue_id, by_release in data["entries"].items()
                   for release, record in by_release.items()
                   if not (reports.REDUCED / f"{issue_id}.py").exists()
                   or record["sha256"] != reports.digest(reports.REDUCED / f"{issue_id}.py"))
    assert not stale, ("measure these again (python -m harness known --measure ID --python PYTHON-OF-THAT-RELEASE): "
                       f"{stale}")
