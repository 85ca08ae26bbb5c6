import json
import subprocess
import sys

import pytest

from harness.cli import main, parse_duration


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("5m", 300), ("8h", 28800), ("1h30m", 5400), ("45", 45)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


def test_fuzz_writes_the_summary(tmp_path, capsys):
    out = tmp_path / "out.json"
    code = main(["fuzz", "--paths", "eager", "--budget", "60s", "--max-examples", "20",
                 "--json", str(out), "--out", str(tmp_path / "failures")])
    summary = json.loads(out.read_text())
    assert code == 0, capsys.readouterr().out
    assert summary["torch"].startswith("2.")
    assert summary["examples"] == 20 and summary["seconds"] > 0
    counts = summary["paths"]["eager"]
    # Every example is exactly one of ok, failed, stopped by a known issue or unsupported.
    assert counts["ok"] + counts["failed"] + counts["stopped_by_known"] == 20
    assert counts["unsupported"] == {}
    assert counts["checked"] == counts["ok"] + counts["failed"]
    assert counts["checked_past_known"] <= sum(counts["known"].values())
    assert "examples/s" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["fuzz", "--paths", "eager,bogus"], "unknown path 'bogus'; valid paths: eager"),
    (["fuzz", "--budget", "soon"], "--budget 'soon' is not a duration; use e.g. 90s"),
    (["check", "missing.json"], "cannot read spec file 'missing.json'"),
])
def test_bad_input_is_one_clear_line(argv, message):
    done = subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.valgrind
def test_bench_json_on_a_small_subset(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "-m", "harness", "bench", "--paths", "eager", "--scenarios", "seed",
                           "--phases", "forward", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["torch"].startswith("2.")
    (row,) = report["results"]
    assert {k: row[k] for k in ("scenario", "path", "phase", "inputs")} == {
        "scenario": "seed", "path": "eager", "phase": "forward", "inputs": 13}
    assert row["instructions"] > 10_000
    assert "start-up" in done.stdout
