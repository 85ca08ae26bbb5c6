"""Bench reports as plain data: load, render, compare, gate against a baseline, plot.

A report is the JSON `bench` writes::

    {"torch": ..., "valgrind": ..., "startup_seconds": ..., "seconds_per_region": ...,
     "selection": {...}, "results": [{"scenario", "case", "path", "phase", "inputs",
                                      "instructions", ...}, ...]}

`instructions` is an int per repetition, or None with an "unsupported" or "error"
reason. Rows are keyed by (scenario, case, path, phase, inputs). A counted row may also
hold ``"functions": {name: instructions per repetition}``: where the row's instructions
went (each function's exclusive cost in the median chunk; small ones summed in
``"(other)"``, so the values add up to `instructions`); `attribute` explains a delta with
them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.counting.cases import PATHS, PHASES

#: the entry of a row's "functions" that holds the functions below the kept threshold
OTHER = "(other)"

BASELINE_DIR = Path(__file__).resolve().parent / "baselines"
DEFAULT_BAND = 0.02
#: changes smaller than this many instructions per repetition never fail the gate: the
#: eager path's counts move by a few hundred with unrelated code changes (Python's
#: method cache and pointer-keyed hash tables depend on memory layout), which is more
#: than the band on the smallest rows
DEFAULT_FLOOR = 1000

Key = tuple[str, str, str, str, Any]
#: (old, new) path pairs whose ratio the table shows when both are in a report
RATIOS = (("owned", "borrowed"), ("eager", "compiled"))


class ReportError(ValueError):
    """A report or baseline file that cannot be used; the message says how to make one."""


def row_key(row: dict[str, Any]) -> Key:
    return (row["scenario"], row["case"], row["path"], row["phase"], row["inputs"])


def describe_key(key: Key) -> str:
    scenario, case, path, phase, inputs = key
    name = scenario if case == scenario else f"{scenario}/{case}"
    return f"{name} {path} {phase} ({inputs} inputs)"


def baseline_path(torch_version: str) -> Path:
    return BASELINE_DIR / f"{torch_version}.json"


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        with open(path) as f:
            report = json.load(f)
    except FileNotFoundError:
        raise ReportError(f"{path} does not exist; make a report with "
                          f"`python -m harness bench --json {path}`") from None
    except json.JSONDecodeError as e:
        raise ReportError(f"{path} is not valid JSON ({e}); regenerate it with "
                          "`python -m harness bench --json FILE`") from None
    check_report(report, str(path))
    return report


def check_report(report: Any, where: str = "report") -> None:
    required = ("scenario", "case", "path", "phase", "inputs", "instructions")
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise ReportError(f"{where} is not a bench report (no 'results' list); make one with "
                          "`python -m harness bench --json FILE`")
    for i, row in enumerate(report["results"]):
        missing = [k for k in required if not isinstance(row, dict) or k not in row]
        if missing:
            raise ReportError(f"{where}: results[{i}] lacks {', '.join(missing)}; regenerate "
                              "it with `python -m harness bench --json FILE`")


def without_functions(report: dict[str, Any]) -> dict[str, Any]:
    """The report with its rows' per-function costs left out (a compact baseline)."""
    return {**report, "results": [{k: v for k, v in r.items() if k != "functions"}
                                  for r in report["results"]]}


def save_report(report: dict[str, Any], path: str | os.PathLike[str]) -> None:
    Path(path).write_text(dumps(report))


def dumps(report: dict[str, Any]) -> str:
    """Stable JSON: one result row per line, so baseline diffs stay readable."""
    head = {k: v for k, v in report.items() if k != "results"}
    rows = ",\n".join("    " + json.dumps(r, sort_keys=False) for r in report["results"])
    text = json.dumps(head, indent=2)[:-2]
    return f'{text},\n  "results": [\n{rows}\n  ]\n}}\n'


# --- rendering --------------------------------------------------------------------------


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    if row.get("instructions") is not None:
        return f"{row['instructions']:,}"
    return "error" if "error" in row else "unsupported"


def render_table(report: dict[str, Any]) -> str:
    """One line per (scenario, case, inputs, phase), one column per path, then costs."""
    rows = report["results"]
    paths = [p for p in PATHS if any(r["path"] == p for r in rows)]
    paths += sorted({r["path"] for r in rows} - set(paths))
    groups: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["case"], r["inputs"], r["phase"]), {})[r["path"]] = r
    ratios = [(old, new) for old, new in RATIOS if old in paths and new in paths]
    header = ["scenario", "case", "inputs", "phase", *paths] + [f"{new}/{old}" for old, new in ratios]
    lines = [header]
    for (scenario, case, inputs, phase), by_path in groups.items():
        line = [scenario, case, str(inputs), phase, *(_cell(by_path.get(p)) for p in paths)]
        line += [_ratio_text(by_path.get(old), by_path.get(new)) for old, new in ratios]
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    numeric = set(range(2, len(header)))
    text = ["  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                      for i, (c, w) in enumerate(zip(line, widths))).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    text.extend(_notes(rows))
    text.append(_costs(report))
    return "\n".join(text)


def _ratio_text(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    a = old.get("instructions") if old else None
    b = new.get("instructions") if new else None
    if not a or b is None:
        return "-"
    return f"{(b / a - 1) * 100:+.2f}%"


def _notes(rows: Iterable[dict[str, Any]]) -> list[str]:
    notes: dict[str, list[str]] = {}
    for r in rows:
        for kind in ("unsupported", "error"):
            if kind in r:
                notes.setdefault(f"{kind}: {r[kind]}", []).append(f"{r['case']} {r['path']} {r['phase']}")
    out = []
    for reason, where in notes.items():
        shown = ", ".join(where[:4]) + (f" and {len(where) - 4} more" if len(where) > 4 else "")
        out.append(f"{reason} [{shown}]")
    return out


def _costs(report: dict[str, Any]) -> str:
    parts = [f"torch {report.get('torch', '?')}", f"valgrind {report.get('valgrind', '?')}"]
    if "reps" in report:
        parts.append(f"{report['reps']} reps per region")
    if "startup_seconds" in report:
        parts.append(f"start-up {report['startup_seconds']:.1f} s")
    if "seconds_per_region" in report:
        parts.append(f"{report['seconds_per_region']:.2f} s per region"
                     + (f" ({report['regions']} regions)" if "regions" in report else ""))
    return "; ".join(parts)


# --- compare and gate -----------------------------------------------------------------------


@dataclass
class Delta:
    key: Key
    old: int | None
    new: int | None
    old_status: str
    new_status: str

    @property
    def ratio(self) -> float | None:
        return self.new / self.old if self.old and self.new is not None else None

    def verdict(self, band: float, floor: int = 0) -> str:
        """ok | regression | improvement | changed (support status) | new | missing.

        A count fails when it moves by more than `band` (relative) and by more than
        `floor` instructions."""
        if self.old_status == "missing":
            return "new"
        if self.new_status == "missing":
            return "missing"
        if self.old_status != self.new_status:
            return "changed"
        ratio = self.ratio
        if ratio is None or abs(self.new - self.old) <= floor:  # type: ignore[operator]
            return "ok"
        if ratio > 1 + band:
            return "regression"
        if ratio < 1 - band:
            return "improvement"
        return "ok"


def _status(row: dict[str, Any] | None) -> str:
    if row is None:
        return "missing"
    if row.get("instructions") is not None:
        return "counted"
    return "error" if "error" in row else "unsupported"


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[Delta]:
    """Per-key deltas, in `old`'s order, then keys only `new` has."""
    old_rows = {row_key(r): r for r in old["results"]}
    new_rows = {row_key(r): r for r in new["results"]}
    keys = list(old_rows) + [k for k in new_rows if k not in old_rows]
    return [Delta(k, (old_rows.get(k) or {}).get("instructions"), (new_rows.get(k) or {}).get("instructions"),
                  _status(old_rows.get(k)), _status(new_rows.get(k))) for k in keys]


def render_compare(deltas: Sequence[Delta], old_name: str = "A", new_name: str = "B",
                   band: float | None = None, floor: int = 0) -> str:
    header = ["scenario", "case", "path", "phase", "inputs", old_name, new_name, "delta", "ratio"]
    if band is not None:
        header.append("verdict")
    lines = [header]
    for d in deltas:
        scenario, case, path, phase, inputs = d.key
        old = f"{d.old:,}" if d.old is not None else d.old_status
        new = f"{d.new:,}" if d.new is not None else d.new_status
        delta = f"{d.new - d.old:+,}" if d.old is not None and d.new is not None else "-"
        ratio = f"{d.ratio:.4f}" if d.ratio is not None else "-"
        line = [scenario, case, path, phase, str(inputs), old, new, delta, ratio]
        if band is not None:
            line.append(d.verdict(band, floor))
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    numeric = {4, 5, 6, 7, 8}
    text = ["  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                      for i, (c, w) in enumerate(zip(line, widths))).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text)


def select_paths(report: dict[str, Any], path: str, shown_as: str | None = None) -> dict[str, Any]:
    """The report's rows of one path, renamed `shown_as`: two paths of one report (or of
    two) then compare row by row, e.g. owned in A against borrowed in B as "owned->borrowed"."""
    rows = [dict(r, path=shown_as or path) for r in report["results"] if r["path"] == path]
    if not rows:
        found = sorted({r["path"] for r in report["results"]})
        raise ReportError(f"the report has no rows of path {path!r}; its paths: {', '.join(found)}")
    return {**report, "results": rows}


# --- attribution: where a delta's instructions went ------------------------------------------

#: by default, name functions until they account for this share of the gross movement
DEFAULT_COVERAGE = 0.9
DEFAULT_TOP = 25
NAME_WIDTH = 100


_CLONE = re.compile(r" \[clone [^\]]*\]")
_OPERATOR = re.compile(r"(\S*\boperator\b.*)$")


def base_name(name: str) -> str:
    """A function's name without return type, template arguments, parameters and
    qualifiers, so overloads and instantiations count as one function:
    ``_object* ns::apply_function<ns::OwnedInputs>(_object*, _object*)`` and its
    ``<ns::BorrowedInputs>`` twin are both ``ns::apply_function``. Approximate for the
    operators spelled with brackets (``operator<``, ``operator()``)."""
    if name.startswith("??? ["):  # unnamed code of one object (see callgrind._function_key)
        return name
    text = _CLONE.sub("", name).replace("(anonymous namespace)", "{anonymous}")
    kept, depth = [], 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            kept.append(ch)
    text = " ".join("".join(kept).split())
    for qualifier in (" const", " volatile", " &&", " &", " noexcept"):
        text = text.removesuffix(qualifier)
    operator = _OPERATOR.search(text)
    if operator:
        return operator.group(1)
    return text.rsplit(" ", 1)[-1] if text else name


def _merged(functions: dict[str, float]) -> dict[str, float]:
    merged: dict[str, float] = {}
    for name, cost in functions.items():
        key = name if name == OTHER else base_name(name)
        merged[key] = merged.get(key, 0.0) + cost
    return merged


@dataclass
class Attribution:
    """A row's delta split over functions: `shown` are (name, A, B, B - A), largest
    movement first, until they account for `coverage` of `gross` (the sum of every
    function's |B - A|); `rest` is what the other `rest_count` functions add up to."""

    key: Key
    old: int
    new: int
    shown: list[tuple[str, float, float, float]]
    rest: float
    rest_count: int
    gross: float

    @property
    def delta(self) -> int:
        return self.new - self.old


def attribute(old_row: dict[str, Any], new_row: dict[str, Any], coverage: float = DEFAULT_COVERAGE,
              top: int = DEFAULT_TOP, full_names: bool = False) -> Attribution:
    """Split ``new - old`` instructions over functions. Both rows need "functions"
    (bench records them); a function kept in one row but not the other counts as 0 there
    (its cost sits in that row's "(other)", which is compared like any function).
    Functions are compared by `base_name` (so the owned and borrowed instantiations of
    one template, or a signature that changed between releases, pair up) unless
    `full_names`."""
    for row in (old_row, new_row):
        if row.get("instructions") is None or not row.get("functions"):
            raise ReportError(f"{describe_key(row_key(row))} has no per-function costs; "
                              "rerun bench (it records them unless --no-functions)")
    old_f, new_f = old_row["functions"], new_row["functions"]
    if not full_names:
        old_f, new_f = _merged(old_f), _merged(new_f)
    moves = [(name, old_f.get(name, 0.0), new_f.get(name, 0.0)) for name in {**old_f, **new_f}]
    moves = [(n, a, b, b - a) for n, a, b in moves if b != a]
    moves.sort(key=lambda m: (-abs(m[3]), m[0]))
    gross = sum(abs(m[3]) for m in moves)
    shown: list[tuple[str, float, float, float]] = []
    covered = 0.0
    for move in moves:
        if covered >= coverage * gross or len(shown) >= top:
            break
        shown.append(move)
        covered += abs(move[3])
    rest = moves[len(shown):]
    return Attribution(row_key(new_row), old_row["instructions"], new_row["instructions"], shown,
                       sum(m[3] for m in rest), len(rest), gross)


def attribute_reports(old: dict[str, Any], new: dict[str, Any], coverage: float = DEFAULT_COVERAGE,
                      top: int = DEFAULT_TOP, full_names: bool = False
                      ) -> tuple[list[Attribution], list[str]]:
    """An `Attribution` per row counted in both reports; notes for rows that cannot be
    attributed (not counted on one side, or no per-function costs)."""
    new_rows = {row_key(r): r for r in new["results"]}
    found, notes = [], []
    for old_row in old["results"]:
        new_row = new_rows.get(row_key(old_row))
        if new_row is None or old_row.get("instructions") is None or new_row.get("instructions") is None:
            continue
        try:
            found.append(attribute(old_row, new_row, coverage, top, full_names))
        except ReportError as e:
            notes.append(str(e))
    return found, notes


def _short(name: str, width: int = NAME_WIDTH) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."


def render_attribution(attributions: Sequence[Attribution], old_name: str = "A",
                       new_name: str = "B") -> str:
    """Per row: its delta, then function, A, B, delta and share of the row's delta."""
    blocks = []
    for at in attributions:
        head = (f"{describe_key(at.key)}: {old_name} {at.old:,}, {new_name} {at.new:,}, "
                f"delta {at.delta:+,}")
        if not at.shown:
            blocks.append(head + "; no function moved")
            continue
        covered = sum(abs(m[3]) for m in at.shown) / at.gross if at.gross else 1.0
        head += (f"; {len(at.shown)} functions account for {covered:.0%} of the "
                 f"{at.gross:,.0f} instructions that moved either way")
        lines = [["function", old_name, new_name, "delta", "share"]]
        for name, a, b, d in at.shown:
            lines.append([_short(name), f"{a:,.1f}", f"{b:,.1f}", f"{d:+,.1f}", _share(d, at.delta)])
        if at.rest_count:
            more = "function" if at.rest_count == 1 else "functions"
            lines.append([f"({at.rest_count} more {more})", "", "", f"{at.rest:+,.1f}",
                          _share(at.rest, at.delta)])
        widths = [max(len(line[i]) for line in lines) for i in range(5)]
        text = ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(line, widths))).rstrip()
                for line in lines]
        text.insert(1, "  " + "  ".join("-" * w for w in widths))
        blocks.append("\n".join([head, *text]))
    return "\n\n".join(blocks)


def _share(part: float, total: int) -> str:
    return f"{part / total:+.0%}" if total else "-"


@dataclass
class CheckResult:
    band: float
    floor: int
    deltas: list[Delta]
    refreshed: dict[str, Any]
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def check(baseline: dict[str, Any], current: dict[str, Any], band: float = DEFAULT_BAND,
          floor: int = DEFAULT_FLOOR) -> CheckResult:
    """Gate `current` against `baseline`: any count outside ``±band`` (relative) and
    more than `floor` instructions away fails, an improvement as much as a regression
    (the baseline must then be refreshed), and so does a row whose support status
    changed. Rows the current run did not measure are ignored; rows the baseline lacks
    are noted. `refreshed` is the baseline to store."""
    if band < 0 or floor < 0:
        raise ReportError(f"band={band}, floor={floor}: give a relative band such as 0.02 "
                          "and an instruction floor >= 0")
    deltas = compare(baseline, current)
    result = CheckResult(band, floor, deltas, _refreshed(baseline, current))
    if baseline.get("torch") and current.get("torch") and baseline["torch"] != current["torch"]:
        result.notes.append(f"the baseline was measured on torch {baseline['torch']}, this run on "
                            f"{current['torch']}; compare like with like")
    if baseline.get("selection") and current.get("selection") and baseline["selection"] != current["selection"]:
        result.notes.append("this run's selection differs from the baseline's: counts on the eager "
                            "path can move by 1-2% with what else runs in the batch")
    for d in deltas:
        verdict = d.verdict(band, floor)
        what = describe_key(d.key)
        if verdict in ("regression", "improvement"):
            assert d.ratio is not None  # both rows are counted when the verdict is one of these
            change = (d.ratio - 1) * 100
            result.failures.append(f"{verdict}: {what}: {d.old:,} -> {d.new:,} "
                                   f"({change:+.2f}%, band ±{band * 100:g}%)")
        elif verdict == "changed":
            result.failures.append(f"changed: {what}: {d.old_status} -> {d.new_status}")
        elif verdict == "new":
            result.notes.append(f"new: {what} is not in the baseline")
    return result


def _refreshed(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The baseline with every row the current run measured replaced or added."""
    current_rows = {row_key(r): r for r in current["results"]}
    rows = [current_rows.pop(row_key(r), r) for r in baseline["results"]]
    rows.extend(current_rows.values())
    refreshed = {k: v for k, v in current.items() if k != "results"}
    if "selection" in baseline:  # the baseline's selection covers the merged rows
        refreshed["selection"] = baseline["selection"]
    refreshed["results"] = rows
    return refreshed


def render_check(result: CheckResult) -> str:
    lines = list(result.notes)
    within = f"±{result.band * 100:g}% (or {result.floor:,} instructions)"
    if result.passed:
        lines.append(f"check passed: every count is within {within} of the baseline")
    else:
        lines.extend(result.failures)
        lines.append(f"check failed: {len(result.failures)} row(s) outside {within}")
    return "\n".join(lines)


# --- plot -------------------------------------------------------------------------------------


def plot(report: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Instructions vs input count, one line per path, a panel per phase (sweep rows,
    or every row with an input count when the report has no sweep)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import StrMethodFormatter
    except ImportError:
        raise ReportError("matplotlib is not installed; install it with `pip install matplotlib` "
                          "(or `pip install -e .[bench]`)") from None
    rows = [r for r in report["results"] if r["instructions"] is not None]
    sweep = [r for r in rows if r["scenario"] == "sweep"]
    rows = sweep or [r for r in rows if isinstance(r["inputs"], int)]
    phases = [p for p in PHASES if any(r["phase"] == p for r in rows)] or ["forward"]
    fig, axes = plt.subplots(1, len(phases), figsize=(6.5 * len(phases), 4.5), squeeze=False)
    for ax, phase in zip(axes[0], phases):
        for name in PATHS:
            points = sorted((r["inputs"], r["instructions"]) for r in rows
                            if r["phase"] == phase and r["path"] == name)
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, marker=".", label=name)
        ax.axvline(24.5, color="grey", linestyle=":", label="SmallVector inline capacity (24)")
        ax.set_title(f"{phase}, torch {report.get('torch', '?')}")
        ax.set_xlabel("tensor inputs")
        ax.set_ylabel("instructions per repetition")
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = [
    "BASELINE_DIR",
    "DEFAULT_BAND",
    "DEFAULT_COVERAGE",
    "DEFAULT_FLOOR",
    "DEFAULT_TOP",
    "OTHER",
    "Attribution",
    "CheckResult",
    "Delta",
    "ReportError",
    "attribute",
    "attribute_reports",
    "base_name",
    "baseline_path",
    "check",
    "check_report",
    "compare",
    "describe_key",
    "dumps",
    "load_report",
    "plot",
    "render_attribution",
    "render_check",
    "render_compare",
    "render_table",
    "row_key",
    "save_report",
    "select_paths",
    "without_functions",
]
