"""Reports rebuilt from the log (report.md, a self-contained report.html with embedded
charts), `report DIR`, `diff LAST TONIGHT`, dedup by cause, and the progress display."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from harness import selfeval
from harness.results import CampaignResult
from harness.cli import main
from harness.progress import CampaignProgress
from harness.records import log_path, read_log
from harness.report import diff, load


@contextlib.contextmanager
def seeded_fault(name: str | None):
    """The seeded fault `name` installed in this process (None: no fault)."""
    if name is None:
        yield
        return
    with selfeval.installed(name):
        yield


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    """(clean, faulty): two small real campaigns in this process, the second with a seeded bug."""
    folders = []
    for fault in (None, "wrong_backward"):
        out = tmp_path_factory.mktemp("campaign")
        # the fault shows on the paths only where the gradient it scales reaches a leaf that
        # requires grad (1 to 3 of 30 examples, which ones varying with the run): 60 for it
        with seeded_fault(fault):
            code = main(["fuzz", "--workers", "0", "--paths", "eager,owned", "--budget", "30s",
                         "--max-examples", "60" if fault else "30", "--out", str(out)])
        assert code == (1 if fault else 0)
        folders.append(out)
    return folders


def test_reports_have_every_section_and_embedded_charts(campaigns):
    _, faulty = campaigns
    page = (faulty / "report.html").read_text()
    md = (faulty / "report.md").read_text()
    for title in ("Summary", "Outcomes per path", "Throughput", "Coverage: tensor inputs per Function",
                  "Coverage: share of examples with each feature", "Unsupported reasons",
                  "Known torch issues", "Failures, one group per cause"):
        assert f"<h2>{title}" in page and f"## {title}" in md
    # self-contained: four charts as data, nothing fetched
    assert len(re.findall(r"src='data:image/png;base64,[A-Za-z0-9+/=]{500,}'", page)) == 4
    assert "http" not in page.replace("http-equiv", "")
    for chart in ("inputs", "features", "outcomes", "throughput"):
        assert f"](charts/{chart}.png)" in md and (faulty / "charts" / f"{chart}.png").stat().st_size > 1000
    assert "with 23-26 tensor inputs" in md
    result = load(faulty)
    for f in result.failures.values():  # each group: its size before and after, and its reproducer
        assert f"### {f.signature}" in md and f"{f.size_before} -> {f.size}" in md
        assert f.size <= f.size_before


def test_report_rebuilds_the_same_report_from_the_log(campaigns, capsys):
    _, faulty = campaigns
    written = (faulty / "report.md").read_text()
    (faulty / "report.md").unlink()
    assert main(["report", str(faulty)]) == 0
    assert (faulty / "report.md").read_text() == written
    assert "reports rebuilt from the log" in capsys.readouterr().out


def test_failures_are_grouped_by_cause_across_paths(campaigns):
    _, faulty = campaigns
    records = list(read_log(log_path(faulty)))
    result = CampaignResult.from_records(records)
    examples = [r for r in records if r["kind"] == "example"]
    for cause, f in result.failures.items():
        showing = [r for r in examples if cause in {o.get("cause") for o in r["outcomes"].values()}
                   or r.get("gradcheck_cause") == cause]
        assert f.count == len(showing)  # once per example, however many paths showed it
        assert f.paths == {p for r in showing for p, o in r["outcomes"].items() if o.get("cause") == cause}
    # the seeded wrong backward shows on both paths as one cause each
    assert any(f.paths == {"eager", "owned"} for f in result.failures.values())


def test_diff_lists_new_and_fixed_failures_and_fails_only_for_new_ones(campaigns, capsys):
    clean, faulty = campaigns
    assert main(["diff", str(clean), str(faulty)]) == 1
    out = capsys.readouterr().out
    assert "new failures (" in out and "mismatch vs math at backward" in out
    assert main(["diff", str(faulty), str(clean)]) == 0
    out = capsys.readouterr().out
    assert "new failures (0)" in out and re.search(r"fixed \(seen last time, not tonight\) \([1-9]", out)
    text, new = diff(load(faulty), load(faulty))
    assert new == 0 and "rate changes" in text


def test_progress_is_a_live_table_on_a_terminal_and_plain_lines_otherwise(campaigns):
    _, faulty = campaigns
    result = load(faulty)
    terminal = io.StringIO()
    with CampaignProgress(result, 60.0, stream=terminal, live=True) as progress:
        progress.update()
    drawn = terminal.getvalue()
    assert "checked" in drawn and "unsupported" in drawn and "eager" in drawn and "budget" in drawn
    log = io.StringIO()
    with CampaignProgress(result, 60.0, stream=log, live=False, every_s=0.0) as progress:
        progress.update()
        progress.update()
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and all(line.startswith("progress ") for line in lines)
    assert f"{result.examples} examples" in lines[0] and "eager" in lines[0]


def test_the_summary_table_keeps_its_columns_for_long_path_names():
    from harness.results import PathCounts

    paths = ["eager", "func.vmap_grad+dynamo", "func.vmap.user+dynamo"]
    result = CampaignResult(paths=paths, device="cpu", examples=100,
                            counts={p: PathCounts(ok=70 + i, failed=i) for i, p in enumerate(paths)})
    lines = result.summary().splitlines()
    header = next(line for line in lines if line.startswith("path "))
    rows = [line for line in lines if line.split(" ")[0] in paths]
    assert len(rows) == 3
    # every row's numbers end where the header's column names end
    ends = [m.end() for m in re.finditer(r"\S+", header)][1:]
    for row in rows:
        assert [m.end() for m in re.finditer(r"\S+", row)][-5:] == ends[-5:], row


def test_a_partly_checked_example_is_not_checked():
    """partly (a known torch issue without a workaround left what it damages unjudged, the rest
    agreed) is its own column, outside `checked`, in the summary, the JSON and the report: a path
    with nothing but partly examples checked nothing, and the verdict says so (fuzz exits 3 on it)."""
    from harness.results import PathCounts
    from harness.report import PATH_HEADER, _path_rows

    result = CampaignResult(["eager", "compiled:eager"], "cpu")
    result.add_record({"kind": "start", "t": 0.0, "paths": ["eager", "compiled:eager"], "device": "cpu",
                       "lifetimes": True})
    for t in (1.0, 2.0):
        result.add_record({"kind": "example", "t": t, "backward": True, "check_ms": 1.0, "generate_ms": 1.0,
                           "gradcheck": "skipped", "features": {}, "spec": None,
                           "outcomes": {"eager": {"status": "ok"},
                                        "compiled:eager": {"status": "partly", "known": ["ca-eager-backend-pins-inputs"]}}})
    counts = result.counts["compiled:eager"]
    assert (counts.checked, counts.ok, counts.failed, counts.partly) == (0, 0, 0, 2)
    assert result.unchecked_paths() == ["compiled:eager"]
    assert result.verdict().startswith("no failures, but nothing checked on compiled:eager:")
    assert {"checked": 0, "checked_share": 0.0, "partly": 2}.items() <= result.as_json()["paths"]["compiled:eager"].items()
    lines = result.summary().splitlines()
    header = next(line for line in lines if line.startswith("path "))
    row = next(line for line in lines if line.startswith("compiled:eager "))
    assert header.split()[1:5] == ["checked", "ok", "failed", "partly"]
    assert row.split()[1:6] == ["0", "(0%)", "0", "0", "2"], row
    report_row = dict(zip(PATH_HEADER, _path_rows(result)[1]))
    assert report_row["checked"] == "0 (0%)" and report_row["partly"] == "2", report_row
    # an older summary, whose `checked` counted partly, loads with checked = ok + failed
    old = PathCounts.from_json({"checked": 5, "checked_share": 1.0, "ok": 2, "partly": 2, "failed": 1,
                                "stopped_by_known": 0, "checked_past_known": 0, "unsupported": {}, "known": {}})
    assert (old.checked, old.partly) == (3, 2)
