"""Real callgrind runs: dump parsing, exact repeatability, and the gate beside a real run.

Cost: one small valgrind run without torch (seconds), two runs of the seed case, eager
forward and backward, and two of the chain scenario's backward on the eager engine and
under compiled autograd (one valgrind start-up with `import torch` each; ~1-2 minutes).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.counting import bench, report
from harness.counting.callgrind import (
    CountingError,
    Measurement,
    build_client_requests,
    measure,
    parse_dump,
    read_dumps,
)
from harness.counting.cases import chain_cases, seed_case
from harness.counting.report import row_key

pytestmark = [
    pytest.mark.valgrind,
    pytest.mark.skipif(shutil.which("valgrind") is None,
                       reason="valgrind is not installed (apt-get install valgrind)"),
]


def test_parse_a_real_dump(tmp_path: Path) -> None:
    library = build_client_requests(tmp_path)
    program = textwrap.dedent(f"""
        import ctypes
        lib = ctypes.CDLL({library!r})
        lib.cg_dump_stats_at.argtypes = [ctypes.c_char_p]
        lib.cg_start_instrumentation()
        for label, n in ((b"small", 1_000), (b"large", 10_000)):
            lib.cg_toggle_collect()
            sum(range(n))
            lib.cg_toggle_collect()
            lib.cg_dump_stats_at(label)
    """)
    subprocess.run(["valgrind", "--tool=callgrind", "--quiet", "--instr-atstart=no",
                    "--collect-atstart=no", "--cache-sim=no",
                    f"--callgrind-out-file={tmp_path / 'callgrind.out'}", sys.executable, "-c", program],
                   check=True, timeout=300)
    small, large = read_dumps(tmp_path)
    assert (small.part, small.label, large.part, large.label) == (1, "small", 2, "large")
    assert small.trigger == "Client Request: small"
    assert set(small.totals) == {"Ir"}
    # 9,000 more loop iterations of sum(range(n)): tens of instructions each
    per_iteration = (large.instructions - small.instructions) / 9_000
    assert 5 < per_iteration < 200, per_iteration
    final = parse_dump(tmp_path / "callgrind.out")  # written at exit, collection off since
    assert (final.label, final.instructions) == (None, 0)
    assert final.trigger == "Program termination"

    truncated = tmp_path / "truncated.out"
    truncated.write_text("".join(Path(small.path).read_text().splitlines(keepends=True)[:8]))
    with pytest.raises(CountingError, match="not a complete callgrind dump"):
        parse_dump(truncated)


@pytest.fixture(scope="module")
def two_runs() -> list[Measurement]:
    return [measure([seed_case()], ("eager",), ("forward", "backward")) for _ in range(2)]


def test_the_same_measurement_twice_gives_identical_counts(two_runs: list[Measurement]) -> None:
    first, second = (m.results for m in two_runs)
    assert first == second
    counts = {r["phase"]: r["instructions"] for r in first}
    assert set(counts) == {"forward", "backward"}
    # one apply of a 13-input Function costs tens of thousands of instructions, not millions
    assert 10_000 < counts["forward"] < 1_000_000
    assert 10_000 < counts["backward"] < 2_000_000


def test_per_function_costs_add_up_and_repeat(two_runs: list[Measurement]) -> None:
    first, second = (m.to_plain() for m in two_runs)
    for row in first["results"]:
        functions = row["functions"]
        assert sum(functions.values()) == pytest.approx(row["instructions"], abs=0.5)
        assert abs(functions["(other)"]) < 0.05 * row["instructions"]
        named = [name for name in functions if name != "(other)"]
        assert len(named) > 20 and not any("'" in name[-2:] for name in named)
    # the apply itself runs in the interpreter and in torch's C++ (demangled names)
    forward = next(r["functions"] for r in first["results"] if r["phase"] == "forward")
    assert "_PyEval_EvalFrameDefault" in forward
    assert any(name.startswith("torch::autograd::") for name in forward)
    attributions, notes = report.attribute_reports(first, second)
    assert not notes and [a.shown for a in attributions] == [[], []]  # identical runs: nothing moved


def test_costs_are_reported(two_runs: list[Measurement]) -> None:
    plain = two_runs[0].to_plain()
    assert plain["regions"] == 4  # two loop-only regions + forward + backward
    assert plain["startup_seconds"] > 0
    assert 0 < plain["seconds_per_region"] < 10
    assert plain["torch"] and plain["valgrind"]


def _scaled(rep: dict[str, Any], factor: float, phase: str) -> dict[str, Any]:
    rows = [dict(r, instructions=round(r["instructions"] * factor)) if r["phase"] == phase else r
            for r in rep["results"]]
    return {**rep, "results": rows}


def test_gate_against_a_real_run(two_runs: list[Measurement], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    real = two_runs[0].to_plain()
    assert report.check(real, two_runs[1].to_plain(), band=0.0).passed
    for factor, phase, verdict in ((1.01, "forward", None), (0.99, "backward", None),
                                   (1.05, "backward", "regression"), (0.95, "forward", "improvement")):
        result = report.check(real, _scaled(real, factor, phase), band=0.02)
        if verdict is None:
            assert result.passed, result.failures
        else:
            assert len(result.failures) == 1 and result.failures[0].startswith(f"{verdict}: seed eager {phase}")

    current = tmp_path / "current.json"
    report.save_report(real, current)
    slower = tmp_path / "slower.json"
    report.save_report(_scaled(real, 1 / 1.05, "forward"), slower)  # the baseline was 5% faster
    assert bench.bench_main(["--from", str(current), "--check", str(current)]) == 0
    assert bench.bench_main(["--from", str(current), "--check", str(slower)]) == 1
    assert "regression: seed eager forward (13 inputs)" in capsys.readouterr().out
    assert bench.compare_main([str(slower), str(current)]) == 0
    assert "1.0500" in capsys.readouterr().out


@pytest.fixture(scope="module")
def compiled_runs() -> list[Measurement]:
    return [measure(chain_cases([1, 2]), ("eager", "compiled"), ("forward", "backward"), reps=10,
                    warmup=10, chunks=5) for _ in range(2)]


def test_compiled_autograd_counts_repeat_and_are_backward_only(compiled_runs: list[Measurement]) -> None:
    """Not bit-identical, unlike the runs without compiled autograd above: after Dynamo's
    captures the heap layout differs from run to run, and every row in the process moves
    (docs/counts.md, "Exactness"): up to 0.45% in four pairs of runs, then 1.45% (538 of
    37,146) and 2.05% (1,544 of 75,316) on eager forward rows. The backward rows, what the
    compiled path counts, must pass the bench gate itself (its band and instruction floor)
    between two runs of the same code; the forward rows of such a process are beyond it
    (open, documented)."""
    first, second = (m.results for m in compiled_runs)
    assert [row_key(r) for r in first] == [row_key(r) for r in second]

    def backward_rows(m: Measurement) -> dict[str, Any]:
        plain = m.to_plain()
        return {**plain, "results": [r for r in plain["results"] if r["phase"] == "backward"]}
    gate = report.check(backward_rows(compiled_runs[0]), backward_rows(compiled_runs[1]))
    assert gate.passed, gate.failures
    counts = {(r["case"], r["path"], r["phase"]): r["instructions"] for r in first}
    assert set(counts) == {(f"chain-{n}", p, ph) for n in (1, 2)
                           for p, ph in (("eager", "forward"), ("eager", "backward"),
                                         ("compiled", "backward"))}
    eager_node = counts["chain-2", "eager", "backward"] - counts["chain-1", "eager", "backward"]
    compiled_node = counts["chain-2", "compiled", "backward"] - counts["chain-1", "compiled", "backward"]
    # each Function node costs thousands of instructions on the engine, more when proxied
    assert 1_000 < eager_node < compiled_node < 1_000_000, (eager_node, compiled_node)
    compiled = next(r for r in first if r["path"] == "compiled")
    assert any("dynamo" in name for name in compiled["functions"])
