"""Bench reports as plain data: load, render, compare, gate against a baseline, plot.

A report is the JSON `bench` writes::

    {"torch": ..., "valgrind": ..., "startup_seconds": ..., "seconds_per_region": ...,
     "selection": {...}, "results": [{"scenario", "case", "path", "phase", "inputs",
                                      "instructions", ...}, ...]}

`instructions` is an int per repetition, or None with an "unsupported" or "error"
reason. Rows are keyed by (scenario, case, path, phase, inputs).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.counting.cases import PATHS, PHASES

BASELINE_DIR = Path(__file__).resolve().parent / "baselines"
DEFAULT_BAND = 0.02
#: changes smaller than this many instructions per repetition never fail the gate: the
#: eager path's counts move by a few hundred with unrelated code changes (Python's
#: method cache and pointer-keyed hash tables depend on memory layout), which is more
#: than the band on the smallest rows
DEFAULT_FLOOR = 1000

Key = tuple[str, str, str, str, Any]


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
    with_ratio = "owned" in paths and "borrowed" in paths
    header = ["scenario", "case", "inputs", "phase", *paths] + (["borrowed/owned"] if with_ratio else [])
    lines = [header]
    for (scenario, case, inputs, phase), by_path in groups.items():
        line = [scenario, case, str(inputs), phase, *(_cell(by_path.get(p)) for p in paths)]
        if with_ratio:
            line.append(_ratio_text(by_path.get("owned"), by_path.get("borrowed")))
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
    "DEFAULT_FLOOR",
    "CheckResult",
    "Delta",
    "ReportError",
    "baseline_path",
    "check",
    "check_report",
    "compare",
    "describe_key",
    "dumps",
    "load_report",
    "plot",
    "render_check",
    "render_compare",
    "render_table",
    "row_key",
    "save_report",
]
