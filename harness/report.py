"""Reports of a campaign, rebuilt from its log: `report.md` and a self-contained `report.html`
(charts drawn with matplotlib, embedded as PNG), and the difference between two campaigns.

    python -m harness report DIR          # DIR/examples.jsonl -> DIR/report.md, DIR/report.html
    python -m harness diff LAST TONIGHT   # new failures, fixed ones, rate changes
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.results import CampaignResult, Failure, PathCounts, shrink_note
from harness.records import features, log_path, read_log, same_cause
from strategies import INLINE_CAPACITY

#: the band of tensor input counts around the borrowed vector's inline capacity
EDGE_BAND = (INLINE_CAPACITY - 1, INLINE_CAPACITY + 2)
#: a rate change smaller than this (in percentage points) is not listed by `diff`
RATE_CHANGE_POINTS = 2.0


def load(where: str | Path) -> CampaignResult:
    """A campaign rebuilt from its log: a campaign folder or the JSONL file itself."""
    path = Path(where)
    path = log_path(path) if path.is_dir() else path
    if not path.exists():
        raise FileNotFoundError(f"{where}: no campaign log here (expected {path}); give a folder written by "
                                f"`fuzz --out DIR` or its examples.jsonl.")
    return CampaignResult.from_records(read_log(path))


# --- the sections, as plain rows -----------------------------------------------------------


def _summary_rows(r: CampaignResult) -> list[tuple[str, str]]:
    g = r.gradcheck
    return [("torch / device", f"{_torch(r)} / {r.device}"),
            ("paths", ", ".join(r.paths)),
            ("examples", f"{r.examples} ({r.with_backward} with a backward)"),
            ("fuzzing", f"{r.fuzz_seconds:.1f} s, {r.examples_per_second:.1f} examples/s"),
            ("whole campaign", f"{r.seconds:.1f} s of the {r.budget_s:.0f} s its budget left to fuzzing and "
                               f"shrinking (after start-up, before reports), {r.sessions} session(s)"),
            ("time per example", f"generation {_per(r.generate_ms, r.examples)} ms, "
                                 f"check {_per(r.check_ms, r.examples)} ms"),
            ("lifetime oracle", "on" if r.lifetimes else "off"),
            ("twin-form oracle", _twins_text(r)),
            ("float64 gradcheck", f"{g['ok']} ok, {g['failed']} failed, {g['skipped']} skipped"),
            ("worker retirements", f"{r.retirements} ({r.retirements_note()})" if r.retirements else "0"),
            ("failure causes", str(len(r.failures))),
            ("known torch issues hit", ", ".join(f"{k} ({n})" for k, n in sorted(r.known.items())) or "none")]


def _twins_text(r: CampaignResult) -> str:
    """Per pair: examples whose twin it was / checked on some path / failed (docs/twins.md)."""
    if not r.twins_on:
        return "off"
    counts = ", ".join(f"{pair} {c.examples}/{c.checked}/{c.failed}" for pair, c in sorted(r.twins.items()))
    return f"on; per pair examples/checked/failed: {counts or 'none yet'}"


def _torch(r: CampaignResult) -> str:
    import torch

    return torch.__version__


def _per(total_ms: float, n: int) -> str:
    return f"{total_ms / n:.1f}" if n else "-"


def _path_rows(r: CampaignResult) -> list[list[str]]:
    rows = []
    for name in r.paths:
        c = r.counts.get(name, PathCounts())
        share = f"{100 * c.checked / r.examples:.0f}%" if r.examples else "-"
        rows.append([name, f"{c.checked} ({share})", str(c.ok), str(c.failed), str(c.partly), str(c.stopped),
                     str(c.past_known), str(sum(c.unsupported.values()))])
    return rows


PATH_HEADER = ["path", "checked", "ok", "failed", "partly", "stopped by known", "checked past known", "unsupported"]


def _coverage_rows(r: CampaignResult) -> list[list[str]]:
    """Every axis, each value with the share of examples that have it somewhere."""
    rows = []
    for axis in sorted(r.coverage):
        values = ", ".join(f"{v} {100 * n / r.examples:.0f}%" for v, n in sorted(r.coverage[axis].items()))
        rows.append([axis, values])
    return rows


def _input_rows(r: CampaignResult) -> list[list[str]]:
    total = sum(r.inputs.values())
    band = sum(n for k, n in r.inputs.items() if EDGE_BAND[0] <= int(k) <= EDGE_BAND[1])
    return [["Functions drawn", str(total)],
            [f"with {EDGE_BAND[0]}-{EDGE_BAND[1]} tensor inputs (around the inline capacity {INLINE_CAPACITY})",
             f"{band} ({100 * band / total:.0f}%)" if total else "0"],
            ["most tensor inputs", str(max((int(k) for k in r.inputs), default=0))]]


def _trace_rows(r: CampaignResult) -> list[list[str]]:
    """Per path that compiles the forward, how Dynamo ran the Functions (harness.paths.tracing)."""
    return [[name, line] for name in r.paths for line in r.counts.get(name, PathCounts()).trace_lines()]


def _unsupported_rows(r: CampaignResult) -> list[list[str]]:
    return [[name, reason, str(n)] for name in r.paths
            for reason, n in sorted(r.counts.get(name, PathCounts()).unsupported.items())]


def _known_rows(r: CampaignResult) -> list[list[str]]:
    return [[name, issue, str(n)] for name in r.paths
            for issue, n in sorted(r.counts.get(name, PathCounts()).known.items())]


def triggering_features(f: Failure) -> str:
    """The features of the smallest reproducer: what the failure still needs after shrinking."""
    found = features(f.spec)
    parts = [f"tensor inputs per Function {found.pop('inputs')}"]
    parts += [f"{axis}={'/'.join(str(v) for v in values)}" for axis, values in found.items() if values]
    return "; ".join(parts)


# --- charts -------------------------------------------------------------------------------


def _charts(r: CampaignResult) -> dict[str, bytes]:
    """PNG bytes by name."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    charts: dict[str, bytes] = {}

    def png(fig: Any) -> bytes:
        buffer = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buffer, format="png", dpi=90)
        plt.close(fig)
        return buffer.getvalue()

    fig, ax = plt.subplots(figsize=(8, 3))
    top = max([int(k) for k in r.inputs] + [INLINE_CAPACITY + 4])
    ax.bar(range(top + 1), [r.inputs.get(k, 0) for k in range(top + 1)], color="#4c72b0")
    ax.axvspan(EDGE_BAND[0] - 0.5, EDGE_BAND[1] + 0.5, color="#dd8452", alpha=0.3,
               label=f"{EDGE_BAND[0]}-{EDGE_BAND[1]}: around the inline capacity {INLINE_CAPACITY}")
    ax.set_xlabel("tensor inputs of a Function")
    ax.set_ylabel("Functions")
    ax.legend(loc="upper right")
    charts["inputs"] = png(fig)

    shares = [(f"{axis}={value}", 100 * n / r.examples) for axis in sorted(r.coverage)
              for value, n in sorted(r.coverage[axis].items())] if r.examples else []
    fig, ax = plt.subplots(figsize=(8, max(3.0, 0.18 * len(shares))))
    ax.barh(range(len(shares)), [s for _, s in shares], color="#55a868")
    ax.set_yticks(range(len(shares)), [n for n, _ in shares], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of examples (%)")
    charts["features"] = png(fig)

    fig, ax = plt.subplots(figsize=(8, 0.6 * len(r.paths) + 1.2))
    left = [0.0] * len(r.paths)
    for label, color, get in (("ok", "#55a868", lambda c: c.ok), ("partly", "#8fbc8f", lambda c: c.partly),
                              ("failed", "#c44e52", lambda c: c.failed),
                              ("stopped by known", "#dd8452", lambda c: c.stopped),
                              ("unsupported", "#8c8c8c", lambda c: sum(c.unsupported.values()))):
        values = [get(r.counts.get(n, PathCounts())) for n in r.paths]
        ax.barh(r.paths, values, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, values)]
    ax.invert_yaxis()
    ax.set_xlabel("examples")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # beside the bars, never on them
    charts["outcomes"] = png(fig)

    fig, ax = plt.subplots(figsize=(8, 2.5))
    if r.times:
        start, width = r.times[0], 10.0
        bins: dict[int, int] = {}
        for t in r.times:
            bins[int((t - start) // width)] = bins.get(int((t - start) // width), 0) + 1
        xs = range(max(bins) + 1)
        ax.plot([width * x for x in xs], [bins.get(x, 0) / width for x in xs], color="#4c72b0")
    ax.set_xlabel("seconds since the campaign started")
    ax.set_ylabel("examples/s")
    charts["throughput"] = png(fig)
    return charts


# --- rendering ------------------------------------------------------------------------------


@dataclass
class _Section:
    title: str
    header: list[str]
    rows: list[list[str]]
    chart: str | None = None
    note: str = ""


def _sections(r: CampaignResult) -> list[_Section]:
    return [
        _Section("Summary", ["", ""], [list(row) for row in _summary_rows(r)]),
        _Section("Outcomes per path", PATH_HEADER, _path_rows(r), "outcomes",
                 "checked = ok + failed, on the example or on the workaround variant past a known torch issue; "
                 "partly (not checked) = a known torch issue without a workaround damaged part of the run, left "
                 "unjudged, and the rest agreed; stopped = a known torch issue ended the check."),
        _Section("Throughput", ["", ""], [["examples/s while fuzzing", f"{r.examples_per_second:.1f}"]],
                 "throughput"),
        _Section("Coverage: tensor inputs per Function", ["", ""], _input_rows(r), "inputs"),
        _Section("Coverage: share of examples with each feature", ["axis", "values"], _coverage_rows(r),
                 "features", "An example counts once for each value it has anywhere in its graph, so the "
                             "shares of an axis add up to more than 100% when Functions differ."),
        _Section("How Dynamo ran the Functions (traced into autograd_function_apply, or not)", ["path", ""],
                 _trace_rows(r)),
        _Section("Unsupported reasons", ["path", "reason", "examples"], _unsupported_rows(r)),
        _Section("Elements not judged at the graph's precision", ["path", ""],
                 [[name, c.uncompared_line()] for name in r.paths
                  if (c := r.counts.get(name, PathCounts())).uncompared_examples]),
        _Section("Known torch issues (counted apart from failures)", ["path", "issue", "examples"], _known_rows(r)),
    ] + ([_Section("Saved failures replayed first", ["cause", "result"],
                   [[cause, result] for cause, result in r.replays.items()], note=r.replay_note())]
         if r.replays else []) + ([_Section("Ray shards", ["shard", "node", "examples", "failures", "ended"],
                                      [[str(s["shard"]), s["node"], str(s["examples"]), str(s["failures"]),
                                        s["ended"]] for s in r.shards])] if r.shards else [])


def _failure_lines(f: Failure) -> list[tuple[str, str]]:
    return [("examples", str(f.count)), ("paths", ", ".join(sorted(f.paths)) or "-"),
            ("size (parts)", f"{f.size_before} -> {f.size} ({shrink_note(f)})"),
            ("replayed first", f.replay or "-"), ("reproducer", f.reproducer or "-"),
            ("triggering features", triggering_features(f))]


def markdown(r: CampaignResult, charts: dict[str, str]) -> str:
    """charts: image file name by chart name."""
    out = ["# Fuzz campaign report", ""]
    for s in _sections(r):
        out += [f"## {s.title}", ""]
        if s.note:
            out += [s.note, ""]
        if s.rows:
            out += ["| " + " | ".join(s.header) + " |", "|" + "---|" * len(s.header)]
            out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in s.rows]
        else:
            out.append("none")
        if s.chart:
            out += ["", f"![{s.chart}]({charts[s.chart]})"]
        out.append("")
    out += ["## Failures, one group per cause", ""]
    if not r.failures:
        out.append("no failures")
    for f in r.failures.values():
        out += [f"### {f.signature}", ""] + [f"- **{k}**: {v}" for k, v in _failure_lines(f)]
        out += ["", "```", f.report, "```", "", "<details><summary>spec</summary>", "", "```json",
                f.spec.to_json(), "```", "</details>", ""]
    return "\n".join(out) + "\n"


_CSS = """body{font-family:sans-serif;max-width:70em;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}
th{background:#f0f0f0}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;white-space:pre-wrap}
h3{color:#a33}.note{color:#555}img{max-width:100%}"""


def html_report(r: CampaignResult, charts: dict[str, bytes]) -> str:
    e = html.escape
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Fuzz campaign report</title>",
           f"<style>{_CSS}</style></head><body><h1>Fuzz campaign report</h1>"]
    for s in _sections(r):
        out.append(f"<h2>{e(s.title)}</h2>")
        if s.note:
            out.append(f"<p class='note'>{e(s.note)}</p>")
        if s.rows:
            head = "".join(f"<th>{e(h)}</th>" for h in s.header) if any(s.header) else ""
            body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in s.rows)
            out.append(f"<table>{'<tr>' + head + '</tr>' if head else ''}{body}</table>")
        else:
            out.append("<p>none</p>")
        if s.chart:
            data = base64.b64encode(charts[s.chart]).decode()
            out.append(f"<img alt='{s.chart}' src='data:image/png;base64,{data}'>")
    out.append("<h2>Failures, one group per cause</h2>")
    if not r.failures:
        out.append("<p>no failures</p>")
    for f in r.failures.values():
        rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _failure_lines(f))
        out += [f"<h3>{e(f.signature)}</h3><table>{rows}</table><pre>{e(f.report)}</pre>",
                f"<details><summary>spec</summary><pre>{e(f.spec.to_json())}</pre></details>"]
    out.append("</body></html>")
    return "\n".join(out)


def write_reports(r: CampaignResult, folder: str | Path) -> tuple[Path, Path]:
    """DIR/report.md (charts beside it in DIR/charts/) and the self-contained DIR/report.html."""
    folder = Path(folder)
    charts = _charts(r)
    (folder / "charts").mkdir(parents=True, exist_ok=True)
    for name, data in charts.items():
        (folder / "charts" / f"{name}.png").write_bytes(data)
    md, page = folder / "report.md", folder / "report.html"
    md.write_text(markdown(r, {name: f"charts/{name}.png" for name in charts}))
    page.write_text(html_report(r, charts))
    return md, page


# --- diff -----------------------------------------------------------------------------------


def diff(last: CampaignResult, tonight: CampaignResult) -> tuple[str, int]:
    """(the difference as text, how many new failure causes). Known torch issues are listed
    apart: they are expected, so they never count as new failures."""
    new = [f for f in tonight.failures.values() if not any(_same_cause(f, g) for g in last.failures.values())]
    gone = [g for g in last.failures.values() if not any(_same_cause(f, g) for f in tonight.failures.values())]
    lines = [f"last: {last.examples} examples ({last.examples_per_second:.1f}/s); "
             f"tonight: {tonight.examples} examples ({tonight.examples_per_second:.1f}/s)", ""]
    lines.append(f"new failures ({len(new)}):")
    lines += [f"  x{f.count} on {','.join(sorted(f.paths)) or '-'}: {f.signature}"
              + (f"\n     reproducer: {f.reproducer}" if f.reproducer else "") for f in new] or ["  none"]
    if tonight.harness_errors:  # what the harness could not look at is not known to be fixed
        lines.append(f"the harness itself failed tonight ({len(tonight.harness_errors)} harness error(s)), so whether "
                     f"these are gone is unknown; seen last time, not tonight ({len(gone)}):")
        lines += [f"  {f.signature}" + (f" (replayed: {tonight.replays[f.signature]})"
                                        if f.signature in tonight.replays else "") for f in gone] or ["  none"]
    else:
        lines.append(f"fixed (seen last time, not tonight) ({len(gone)}):")
        lines += [f"  {f.signature}" for f in gone] or ["  none"]
    known_new = sorted(set(tonight.known) - set(last.known))
    known_gone = sorted(set(last.known) - set(tonight.known))
    changes = [f"new {k}" for k in known_new] + [f"not hit {k}" for k in known_gone]
    lines.append("known torch issues: " + (", ".join(changes) or "no change"))
    lines.append(f"rate changes (per path, share of examples, at least {RATE_CHANGE_POINTS:g} points):")
    changes = _rate_changes(last, tonight)
    lines += changes or ["  none"]
    return "\n".join(lines), len(new)


def _same_cause(a: Failure, b: Failure) -> bool:
    """Whether two campaigns' failures are one cause: the same (cause, path family), which a
    cause's text holds (records.Cause). A cause an older harness wrote has no family: the
    families of the paths it was seen on stand for it."""
    return same_cause(a.signature, b.signature, a.paths) or same_cause(b.signature, a.signature, b.paths)


def _rate_changes(last: CampaignResult, tonight: CampaignResult) -> list[str]:
    def shares(r: CampaignResult, name: str) -> dict[str, float]:
        c = r.counts.get(name, PathCounts())
        n = r.examples or 1
        return {"ok": 100 * c.ok / n, "partly": 100 * c.partly / n, "failed": 100 * c.failed / n, "stopped by known": 100 * c.stopped / n,
                "unsupported": 100 * sum(c.unsupported.values()) / n}
    lines = []
    for name in dict.fromkeys(last.paths + tonight.paths):
        before, after = shares(last, name), shares(tonight, name)
        for what in before:
            if abs(after[what] - before[what]) >= RATE_CHANGE_POINTS:
                lines.append(f"  {name} {what}: {before[what]:.1f}% -> {after[what]:.1f}%")
    return lines


__all__ = ["diff", "html_report", "load", "markdown", "triggering_features", "write_reports"]
