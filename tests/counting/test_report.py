"""Reports: table, compare, the regression gate and the CLI entry points, on synthetic
reports (the same gate runs against a real callgrind run in test_callgrind.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.counting import bench, report
from harness.counting.report import check, compare


def _row(case: str, path: str, phase: str, inputs: int, instructions: int | None, **extra: Any) -> dict[str, Any]:
    scenario = "seed" if case == "seed" else "sweep"
    return {"scenario": scenario, "case": case, "path": path, "phase": phase, "inputs": inputs,
            "instructions": instructions, "reps": 50, **extra}


def _report(rows: list[dict[str, Any]], torch: str = "2.13.0+cpu") -> dict[str, Any]:
    return {"torch": torch, "valgrind": "3.19.0", "startup_seconds": 15.0,
            "seconds_per_region": 0.4, "regions": 6, "results": rows}


BASE = _report([
    _row("seed", "eager", "forward", 13, 75_000),
    _row("seed", "owned", "forward", 13, 32_000),
    _row("seed", "borrowed", "forward", 13, 32_300),
    _row("sweep-0", "eager", "backward", 0, None, unsupported="no differentiable outputs"),
])


def _scaled(rep: dict[str, Any], factor: float, only: str | None = None) -> dict[str, Any]:
    rows = [dict(r, instructions=round(r["instructions"] * factor))
            if r["instructions"] is not None and (only is None or r["path"] == only) else dict(r)
            for r in rep["results"]]
    return {**rep, "results": rows}


def test_table_has_a_column_per_path_the_ratio_and_the_costs() -> None:
    text = report.render_table(BASE)
    header, _rule, seed_row = text.splitlines()[:3]
    assert header.split() == ["scenario", "case", "inputs", "phase", "eager", "owned", "borrowed",
                              "borrowed/owned"]
    assert seed_row.split() == ["seed", "seed", "13", "forward", "75,000", "32,000", "32,300", "+0.94%"]
    assert "unsupported: no differentiable outputs [sweep-0 eager backward]" in text
    assert "start-up 15.0 s; 0.40 s per region (6 regions)" in text


def test_check_passes_inside_the_band() -> None:
    for factor in (1.0, 1.019, 0.981):
        result = check(BASE, _scaled(BASE, factor), band=0.02)
        assert result.passed, result.failures


@pytest.mark.parametrize("factor,verdict", [(1.03, "regression"), (0.97, "improvement")])
def test_check_fails_outside_the_band_in_both_directions(factor: float, verdict: str) -> None:
    current = _scaled(BASE, factor, only="owned")
    result = check(BASE, current, band=0.02, floor=0)
    expected = (f"{verdict}: seed owned forward (13 inputs): 32,000 -> {round(32_000 * factor):,} "
                f"({(factor - 1) * 100:+.2f}%, band ±2%)")
    assert result.failures == [expected]
    # the refreshed baseline takes the new count and keeps every other row
    refreshed = {report.row_key(r): r["instructions"] for r in result.refreshed["results"]}
    assert refreshed[("seed", "seed", "owned", "forward", 13)] == round(32_000 * factor)
    assert refreshed[("seed", "seed", "eager", "forward", 13)] == 75_000
    assert len(refreshed) == len(BASE["results"])


def test_small_absolute_changes_stay_under_the_floor() -> None:
    current = _scaled(BASE, 1.03, only="owned")  # +960 instructions: 3%, but under 1,000
    assert check(BASE, current, band=0.02).passed
    assert not check(BASE, current, band=0.02, floor=959).passed
    assert "(or 1,000 instructions)" in report.render_check(check(BASE, current))


def test_check_flags_a_support_change_and_notes_new_and_foreign_rows() -> None:
    current = _report([
        _row("seed", "eager", "forward", 13, 75_000),
        _row("seed", "owned", "forward", 13, None, unsupported="native build failed"),
        _row("sweep-24", "eager", "forward", 24, 105_000),
    ], torch="2.14.1")
    result = check({**BASE, "selection": {"reps": 50}}, {**current, "selection": {"reps": 10}}, band=0.02)
    assert result.failures == ["changed: seed owned forward (13 inputs): counted -> unsupported"]
    assert any("new: sweep/sweep-24 eager forward (24 inputs)" in n for n in result.notes)
    assert any("torch 2.13.0+cpu" in n and "2.14.1" in n for n in result.notes)
    assert any("selection differs" in n for n in result.notes)
    # rows the current run did not measure stay in the refreshed baseline
    keys = [report.row_key(r) for r in result.refreshed["results"]]
    assert ("seed", "seed", "borrowed", "forward", 13) in keys
    assert ("sweep", "sweep-24", "eager", "forward", 24) in keys


def test_compare_reports_deltas_and_ratios() -> None:
    new = _scaled(BASE, 0.5, only="eager")
    deltas = compare(BASE, new)
    eager = deltas[0]
    assert (eager.old, eager.new, eager.ratio) == (75_000, 37_500, 0.5)
    text = report.render_compare(deltas)
    line = text.splitlines()[2]
    assert line.split() == ["seed", "seed", "eager", "forward", "13", "75,000", "37,500", "-37,500", "0.5000"]
    assert "unsupported" in text.splitlines()[-1]


def _write(tmp_path: Path, name: str, rep: dict[str, Any]) -> str:
    path = tmp_path / name
    report.save_report(rep, path)
    return str(path)


def test_saved_reports_round_trip(tmp_path: Path) -> None:
    assert report.load_report(_write(tmp_path, "a.json", BASE)) == BASE


def test_bench_main_gate_exit_status_and_refreshed_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = _write(tmp_path, "base.json", BASE)
    inside = _write(tmp_path, "inside.json", _scaled(BASE, 1.01))
    faster = _scaled(BASE, 0.9)
    faster["results"][0]["functions"] = {"f": 60_000.0, "(other)": 7_500.0}
    outside = _write(tmp_path, "outside.json", faster)
    assert bench.bench_main(["--from", inside, "--check", baseline, "--band", "0.02"]) == 0
    assert "check passed" in capsys.readouterr().out
    assert bench.bench_main(["--from", outside, "--check", baseline, "--band", "0.02"]) == 1
    out = capsys.readouterr().out
    assert "improvement: seed eager forward (13 inputs): 75,000 -> 67,500 (-10.00%, band ±2%)" in out
    refreshed = json.loads(out.split("--json writes it whole):\n")[1])
    assert refreshed["results"][0]["instructions"] == 67_500
    assert "functions" not in refreshed["results"][0]  # the printed baseline stays compact
    # a wide band lets the same change through
    assert bench.bench_main(["--from", outside, "--check", baseline, "--band", "0.2"]) == 0


def test_compare_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path, "a.json", BASE)
    b = _write(tmp_path, "b.json", _scaled(BASE, 1.1))
    assert bench.compare_main([a, b]) == 0
    out = capsys.readouterr().out
    eager = next(line.split() for line in out.splitlines() if line.startswith("seed") and " eager " in line)
    assert eager == ["seed", "seed", "eager", "forward", "13", "75,000", "82,500", "+7,500", "1.1000"]
    assert bench.compare_main([a, b, "--band", "0.02"]) == 1
    assert "regression: seed eager forward" in capsys.readouterr().out


def test_unusable_files_give_one_line_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": []}')
    assert bench.compare_main([str(bad), str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a bench report" in err and "--json FILE" in err
    assert bench.bench_main(["--from", str(tmp_path / "missing.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_bench_rejects_unknown_names_before_running(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.bench_main(["--paths", "eager,fast"]) == 2
    assert "unknown path 'fast'; valid paths: eager, owned, borrowed" in capsys.readouterr().err


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rows = [_row(f"sweep-{n}", p, ph, n, 1000 * n + (7 if p == "borrowed" else 0))
            for n in (0, 24, 25) for p in ("eager", "owned", "borrowed") for ph in ("forward", "backward")]
    out = tmp_path / "sweep.png"
    report.plot(_report(rows), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
