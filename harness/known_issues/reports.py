"""Upstream-ready bug reports of the registry's entries, and the measurements they quote.

Each entry has a reduced reproducer, `reproducers/reduced/<id>.py`: plain torch (and Python's
standard library), under 40 lines, printing `expected: ...` and `observed: ...` and exiting 1
with REPRODUCED while the bug is there (a crash entry's may die of a signal instead). Its
docstring's first line is the report's title, a sentence stating the wrong behaviour; a line
`Usage: python repro.py [a|b|c] [ca]` names the arguments it takes: the torch.compile backend
(or compiled autograd's compiler, `capture` for none; the first one is the default) and `ca` (the
backward under compiled autograd too). No usage line: no arguments.

`measure` runs every argument set of every reduced reproducer under one Python (one torch
release) and stores what each printed in `measurements.json`, with the date, the reproducer's
hash (a changed reproducer must be measured again) and `torch.utils.collect_env`'s output of the
machine. `report` writes an entry's report in the shape of PyTorch's bug template from the
registry, the reproducer and those measurements; it runs nothing.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import datetime
import fcntl
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from harness.known_issues import RELEASES as _RELEASES
from harness.known_issues.entry import KINDS, REPRODUCERS, KnownIssue

REDUCED = REPRODUCERS / "reduced"
MEASUREMENTS = Path(__file__).resolve().parent / "measurements.json"
#: the releases a report's table has a row for: the project's tested torch versions
RELEASES = tuple(".".join(map(str, r)) for r in _RELEASES)

_USAGE = re.compile(r"^Usage: python repro\.py((?: \[[a-z_|]+\])*)$")
_GROUP = re.compile(r"\[([a-z_|]+)\]")

#: what each argument of a reduced reproducer means, for a report's legend
ARGUMENTS = {
    "eager": "torch.compile's backend `eager` (for a compiled-autograd bug: the backend compiled autograd "
             "compiles its captured backward graph with)",
    "aot_eager": "backend `aot_eager` (AOT Autograd, no code generation)",
    "inductor": "backend `inductor` (AOT Autograd and generated code, here C++ on the CPU)",
    "capture": "compiled autograd runs its captured backward graph without torch.compile",
    "ca": "the backward also runs under compiled autograd (compiling its graph with the backend given, or running it as captured where none is)",
}


def reduced_reproducer(issue: KnownIssue) -> Path:
    return REDUCED / f"{issue.id}.py"


def _docstring(path: Path) -> list[str]:
    return (ast.get_docstring(ast.parse(path.read_text())) or "").splitlines()


def report_title(path: Path) -> str:
    """The first line of the reproducer's docstring: the wrong behaviour in one sentence."""
    lines = _docstring(path)
    return lines[0].rstrip(".") if lines else ""


def argument_sets(path: Path) -> list[tuple[str, ...]]:
    """Every argument list the reproducer's usage line allows, its default first: each choice of
    the first group, each also with `ca` where the usage offers it; [()] without a usage line."""
    usage = [m for line in _docstring(path) if (m := _USAGE.match(line))]
    if not usage:
        return [()]
    groups = [g.split("|") for g in _GROUP.findall(usage[0][1])]
    flag = groups and groups[-1] == ["ca"]
    choices = groups[0] if groups and groups[0] != ["ca"] else []
    firsts = [(c,) for c in choices] or [()]
    return [a + extra for extra in ((), ("ca",))[:1 + bool(flag)] for a in firsts]


def label(args: tuple[str, ...]) -> str:
    return " ".join(args) or "no arguments"


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of a reduced reproducer with one argument list."""

    #: reproduces, does not reproduce, crashes (killed by a signal), fails otherwise, times out
    state: str
    expected: str
    observed: str
    seconds: float
    #: how it failed otherwise (its last line: an exception, "AssertionError: another difference")
    error: str = ""

    @property
    def present(self) -> bool:
        return self.state in ("reproduces", "crashes")


def _printed(output: str, key: str) -> str:
    return next((line[len(key) + 2:] for line in output.splitlines() if line.startswith(f"{key}: ")), "")


def run_reduced(path: Path, args: tuple[str, ...] = (), python: str = sys.executable, timeout: float = 900) -> Run:
    """Run a reduced reproducer as a user would, in a fresh process and an empty folder."""
    start = datetime.datetime.now()
    with tempfile.TemporaryDirectory() as cwd:
        try:
            done = subprocess.run([python, str(path), *args], capture_output=True, text=True, timeout=timeout,
                                  cwd=cwd, check=False)
        except subprocess.TimeoutExpired:
            return Run("times out", "", f"no result within {timeout:.0f} s", timeout)
    seconds = round((datetime.datetime.now() - start).total_seconds(), 1)
    expected, observed = _printed(done.stdout, "expected"), _printed(done.stdout, "observed")
    lines = (done.stdout + done.stderr).strip().splitlines()
    if done.returncode == 1 and "REPRODUCED" in lines:
        return Run("reproduces", expected, observed, seconds)
    if done.returncode == 0:
        return Run("does not reproduce", expected, observed, seconds)
    if done.returncode < 0:
        return Run("crashes", expected, f"the process died of {signal.Signals(-done.returncode).name}", seconds)
    return Run("fails otherwise", expected, observed, seconds, _raised(done.stderr) or
               (lines[-1] if lines else f"exit status {done.returncode}"))


def _raised(stderr: str) -> str:
    """The exception line of the last traceback in `stderr` (the first unindented line after it:
    Dynamo's messages go on for lines after their first)."""
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last):")]
    after = lines[starts[-1] + 1:] if starts else []
    return next((line for line in after if line and not line.startswith(" ")), "")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- measurements ---------------------------------------------------------------------------------


def load_measurements(store: Path = MEASUREMENTS) -> dict:
    if not store.exists():
        return {"releases": {}, "entries": {}}
    return json.loads(store.read_text())


def _record(store: Path, issue_id: str, release: str, measured: dict, machine: dict | None) -> dict:
    """Add one entry's runs on one release to the store (and the machine's description), under a
    lock, reading the store afresh: measurements of several releases may run at once."""
    with open(store.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = load_measurements(store)
        data["entries"].setdefault(issue_id, {})[release] = measured
        if machine is not None:
            data["releases"][release] = machine
        temporary = store.with_suffix(".tmp")
        temporary.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.replace(temporary, store)
    return data


def _torch_of(python: str) -> tuple[str, str]:
    """(release, full version) of the torch that `python` imports."""
    done = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"error: {python} cannot import torch ({(done.stderr.strip().splitlines() or ['?'])[-1]}); "
                         f"give --python a Python whose environment has torch installed.")
    version = done.stdout.strip()
    release = re.match(r"\d+\.\d+\.\d+", version)
    return (release[0] if release else version), version


def measure(issues: Iterable[KnownIssue], python: str = sys.executable, again: bool = False,
            store: Path = MEASUREMENTS, timeout: float = 900, log: Callable[[str], None] = print) -> dict:
    """Run every argument set of each entry's reduced reproducer under `python` and store the runs,
    entry by entry (an interrupted measurement keeps what it finished). An entry already measured
    on this release with the same reproducer is skipped unless `again`."""
    release, version = _torch_of(python)
    data = load_measurements(store)
    machine = None
    for issue in issues:
        path = reduced_reproducer(issue)
        measured = digest(path)  # of the text measured: the file may change during the runs
        stored = data["entries"].get(issue.id, {}).get(release)
        if stored and stored["sha256"] == measured and not again:
            continue
        runs = {}
        for args in argument_sets(path):
            run = run_reduced(path, args, python, timeout)
            log(f"torch {version}  {issue.id:<52} {label(args):<16} {run.state} ({run.seconds:.0f} s)")
            runs[label(args)] = dataclasses.asdict(run)
        today = datetime.date.today().isoformat()
        if machine is None:  # once per measurement, where something is measured
            machine = {"torch": version, "date": today, "collect_env": _collect_env(python)}
        data = _record(store, issue.id, release, {"sha256": measured, "date": today, "runs": runs}, machine)
    return data


def _collect_env(python: str) -> str:
    done = subprocess.run([python, "-m", "torch.utils.collect_env"], capture_output=True, text=True, check=False)
    return (done.stdout or done.stderr).strip()


def measured_runs(issue: KnownIssue, data: dict) -> dict[str, dict[str, Run]]:
    """{release: {argument label: Run}} of the entry's current reproducer (stale ones left out)."""
    current = digest(reduced_reproducer(issue))
    return {release: {name: Run(**run) for name, run in stored["runs"].items()}
            for release, stored in data["entries"].get(issue.id, {}).items() if stored["sha256"] == current}


def reproduces_on(issue: KnownIssue, data: dict) -> dict[str, bool]:
    """{release: whether any argument set reproduced it there}, as measured."""
    return {release: any(run.present for run in runs.values()) for release, runs in measured_runs(issue, data).items()}


def readiness(issue: KnownIssue, data: dict) -> str:
    """"ready to file", or why the report is not."""
    if issue.upstream:
        return ("documented upstream" if issue.upstream[0].startswith("documented limitation")
                else "already reported upstream")
    if issue.upstream is None:
        return "upstream not searched yet"
    if issue.kind == "limitation":
        return "a limitation (a graph break, or documented behaviour), not a bug report"
    measured = reproduces_on(issue, data)
    if RELEASES[-1] not in measured:
        return f"not measured on torch {RELEASES[-1]}"
    if not measured[RELEASES[-1]]:
        return f"fixed in torch {RELEASES[-1]}"
    return "ready to file"


# --- reports --------------------------------------------------------------------------------------


def _cell(run: Run | None) -> str:
    if run is None:
        return "not measured"
    return {"reproduces": "**reproduces**", "crashes": "**crashes**", "does not reproduce": "no"}.get(
        run.state, run.state)


def _shown_run(runs: dict[str, dict[str, Run]], names: list[str]) -> tuple[str, str, Run] | None:
    """The run whose output the report quotes: on the newest release where the bug is present, the
    first argument set (in the usage line's order, the default first) that shows it; else the
    newest release's default run."""
    for release in sorted(runs, key=_release_key, reverse=True):
        for name in names:
            if name in runs[release] and runs[release][name].present:
                return release, name, runs[release][name]
    for release in sorted(runs, key=_release_key, reverse=True):
        for name in names:
            if name in runs[release]:
                return release, name, runs[release][name]
    return None


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", release))


def report(issue: KnownIssue, data: dict) -> str:
    """The entry's bug report (markdown), in the shape of PyTorch's bug-report template."""
    path = reduced_reproducer(issue)
    code = path.read_text()
    runs = measured_runs(issue, data)
    names = [label(a) for a in argument_sets(path)]
    lines = [f"# {report_title(path)}", "",
             f"<!-- python -m harness known --report {issue.id} (harness/known_issues/); kind: {issue.kind}; "
             f"{readiness(issue, data)} -->", "",
             "### 🐛 Describe the bug", "", issue.title + ".", "",
             f"Reproducer (plain torch, {len(code.splitlines())} lines; save as `repro.py`):", "",
             "```python", code.rstrip("\n"), "```", ""]
    shown = _shown_run(runs, names)
    if shown is None:
        lines += ["Not measured yet: `python -m harness known --measure " + issue.id + "`.", ""]
    else:
        release, name, run = shown
        command = "python repro.py" + ("" if name == "no arguments" else f" {name}")
        lines += [f"Output on torch {data['releases'][release]['torch']} (`{command}`):", "", "```",
                  f"expected: {run.expected}", f"observed: {run.observed}", "```", ""]
        lines += _table(issue, data, runs, names)
    if issue.upstream:
        lines += ["Upstream: " + "; ".join(issue.upstream) + ".", ""]
    if issue.related:
        lines += ["Related, not the same: " + "; ".join(issue.related) + ".", ""]
    lines += ["### Versions", ""]
    shown_release = shown[0] if shown else None
    if shown_release:
        lines += [f"The measuring machine, with torch {data['releases'][shown_release]['torch']} "
                  f"(`python -m torch.utils.collect_env`):", "", "```",
                  data["releases"][shown_release]["collect_env"], "```"]
    else:
        lines += ["(not measured)"]
    return "\n".join(lines) + "\n"


def _table(issue: KnownIssue, data: dict, runs: dict[str, dict[str, Run]], names: list[str]) -> list[str]:
    dates = sorted({data["entries"][issue.id][r]["date"] for r in runs})
    rows = ["Measured " + " to ".join(dict.fromkeys((dates[0], dates[-1]))) + " with each release's "
            "reproducer run in a fresh process (`python -m harness known --measure " + issue.id +
            " --python PYTHON-OF-THAT-RELEASE --again` measures it again); `expected` is eager autograd "
            "(or what torch documents) in the same run:", "",
            "| torch | " + " | ".join(f"`{n}`" for n in names) + " |",
            "|---|" + "---|" * len(names)]
    for release in RELEASES + tuple(sorted(set(runs) - set(RELEASES), key=_release_key)):
        cells = [_cell(runs.get(release, {}).get(n)) for n in names]
        rows.append(f"| {release} | " + " | ".join(cells) + " |")
    used = [a for a in ARGUMENTS if any(a in n.split() for n in names)]
    others = [(r, n, run) for r, by in runs.items() for n, run in by.items()
              if run.state not in ("reproduces", "crashes", "does not reproduce")]
    rows.append("")
    if used:
        rows += ["Arguments: " + "; ".join(f"`{a}`: {ARGUMENTS[a]}" for a in used) + ".", ""]
    for release, name, run in others:
        rows += [f"torch {release}, `{name}`: {run.state}: {run.error or run.observed}"
                 + (f" (observed: {run.observed})" if run.error and run.observed else ""), ""]
    return rows


def write_reports(issues: list[KnownIssue], out: Path, data: dict) -> list[Path]:
    """One report per entry, `<id>.md`, and `README.md`: the summary and the index."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for issue in issues:
        path = out / f"{issue.id}.md"
        path.write_text(report(issue, data))
        written.append(path)
    (out / "README.md").write_text(summary(issues, data))
    return written


def summary(issues: list[KnownIssue], data: dict) -> str:
    """Counts per kind, the silent wrong results nobody reported, the release x argument table
    and the index of reports with their readiness."""
    kinds = collections.Counter(k.kind for k in issues)
    silent = [k for k in issues if k.kind == "silent wrong result" and not k.upstream]
    lines = ["# Upstream reports of the known torch issues", "",
             "Written by `python -m harness known --report all --out DIR` from the registry "
             "(harness/known_issues/), the reduced reproducers and their measurements "
             "(`measurements.json`, `python -m harness known --measure`).", "",
             f"{len(issues)} entries. By kind: " + ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k]) + ".", "",
             f"Silent wrong results with no upstream report: {len(silent)} of {kinds['silent wrong result']}"
             + (": " + ", ".join(f"`{k.id}`" for k in silent) if silent else "") + ".", ""]
    lines += _release_table(issues, data)
    ready = [k for k in issues if readiness(k, data) == "ready to file"]
    lines += [f"Ready to file: {len(ready)}.", "", "| report | kind | upstream | related | status |",
              "|---|---|---|---|---|"]
    for k in issues:
        related = ", ".join(r.split(" ")[0] for r in k.related) or "-"
        upstream = ", ".join(r.split(" ")[0] for r in k.upstream or ()) or k.upstream_text()
        lines.append(f"| [{report_title(reduced_reproducer(k))}]({k.id}.md) | {k.kind} | {upstream} | {related} | "
                     f"{readiness(k, data)} |")
    return "\n".join(lines) + "\n"


def _release_table(issues: list[KnownIssue], data: dict) -> list[str]:
    """Per release, how many entries reproduce at all, and per argument how many of those measured with it."""
    columns = ["no arguments", "capture", "eager", "aot_eager", "inductor", "eager ca", "aot_eager ca",
               "inductor ca", "ca"]
    lines = ["Measured (entries reproducing / entries measured; a column counts the entries whose reproducer "
             "takes that argument):", "",
             "| torch | any | " + " | ".join(f"`{c}`" for c in columns) + " |", "|---|---|" + "---|" * len(columns)]
    for release in RELEASES:
        per_entry = [measured_runs(k, data).get(release) for k in issues]
        measured = [runs for runs in per_entry if runs]
        cells = [f"{sum(any(r.present for r in runs.values()) for runs in measured)} / {len(measured)}"]
        for column in columns:
            with_it = [runs[column] for runs in measured if column in runs]
            cells.append(f"{sum(r.present for r in with_it)} / {len(with_it)}" if with_it else "-")
        lines.append(f"| {release} | " + " | ".join(cells) + " |")
    return lines + [""]


__all__ = [
    "ARGUMENTS",
    "MEASUREMENTS",
    "REDUCED",
    "RELEASES",
    "Run",
    "argument_sets",
    "digest",
    "label",
    "load_measurements",
    "measure",
    "measured_runs",
    "readiness",
    "reduced_reproducer",
    "report",
    "report_title",
    "reproduces_on",
    "run_reduced",
    "summary",
    "write_reports",
]
