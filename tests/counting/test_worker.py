"""The worker outside valgrind (client requests are no-ops there), and the one-line
errors of a missing valgrind. Fast: no valgrind runs here."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.counting import bench
from harness.counting.callgrind import (
    WORKER_BOOTSTRAP,
    ValgrindNotFound,
    _worker_env,
    measure,
    write_worker_spec,
)
from harness.counting.cases import CaseSpec, chain_cases, seed_case, sweep_cases


def test_worker_runs_every_region_and_isolates_bad_cases(tmp_path: Path) -> None:
    cases = [
        seed_case(),
        sweep_cases([0])[0],
        # a registered-style case: factory + JSON params, input count taken from the workload
        CaseSpec.make("graph", "three", "harness.counting.workloads:returning_inputs", {"inputs": 3}),
        CaseSpec.make("graph", "diamond", "harness.counting.workloads:diamond_graph"),
        CaseSpec.make("graph", "broken", "harness.counting.workloads:returning_inputs", {"inputs": "x"}),
    ]
    spec = write_worker_spec(tmp_path, cases, ["eager"], ["forward", "backward"], reps=2, warmup=1,
                             chunks=2)
    proc = subprocess.run([sys.executable, "-P", "-c", WORKER_BOOTSTRAP, "spec.json", "out.json"],
                          cwd=tmp_path, env=_worker_env(), capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["under_valgrind"] is False
    assert out["inputs"] == {"0": 13, "1": 0, "2": 3, "3": 2, "4": None}
    status = {(r["case"], r["phase"]): (rec["status"], rec.get("reason", ""))
              for r, rec in zip(spec["regions"][2:], out["regions"][2:])}
    assert status[(0, "forward")] == status[(0, "backward")] == ("dumped", "")
    assert status[(1, "forward")] == ("dumped", "")
    assert status[(1, "backward")] == ("unsupported", "no differentiable outputs to backward through")
    assert status[(2, "backward")] == status[(3, "backward")] == ("dumped", "")
    assert status[(4, "forward")][0] == "error" and "TypeError" in status[(4, "forward")][1]
    assert [r["status"] for r in out["regions"][:2]] == ["dumped", "dumped"]  # the loop-only regions


def test_missing_valgrind_is_one_sentence_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ValgrindNotFound, match=r"install it with `apt-get install valgrind`"):
        measure([seed_case()])
    assert bench.bench_main(["--paths", "eager", "--scenarios", "seed"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: valgrind was not found on PATH; instruction counts need callgrind: "
                   "install it with `apt-get install valgrind`.\n")


def test_the_compiled_path_counts_the_cached_backward_only(tmp_path: Path) -> None:
    """Outside valgrind: compiled autograd captures during the warm-up, never in a counted
    chunk (the worker fails such a region), and the compiled path has no forward region."""
    cases = chain_cases([1, 3])
    spec = write_worker_spec(tmp_path, cases, ["eager", "compiled"], ["forward", "backward"],
                             reps=4, warmup=2, chunks=2)
    counted = [(r["case"], r["path"], r["phase"]) for r in spec["regions"][2:]]
    assert counted == [(c, p, ph) for c in (0, 1) for p, ph in
                       (("eager", "forward"), ("eager", "backward"), ("compiled", "backward"))]
    proc = subprocess.run([sys.executable, "-P", "-c", WORKER_BOOTSTRAP, "spec.json", "out.json"],
                          cwd=tmp_path, env=_worker_env(), capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert [r["status"] for r in out["regions"]] == ["dumped"] * len(spec["regions"]), out["regions"]


def test_a_capture_inside_the_counted_chunks_fails_the_region(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard itself: an engine that captures on every call (the cache cleared each
    time) makes the region an error, not a count."""
    import torch
    from torch._dynamo import compiled_autograd

    from harness.counting import worker
    from harness.counting.workloads import chain_graph
    from harness.paths.compiled import compiler_fn

    class NoControl:
        start = stop = nop = staticmethod(lambda: None)

        def dump(self, label: str) -> None:
            pass

    @contextlib.contextmanager
    def uncached() -> Any:
        torch._C._dynamo.compiled_autograd.clear_cache()
        with compiled_autograd._enable(compiler_fn("capture")):
            yield

    paths = worker.Paths(None, None)
    workload = chain_graph(1)
    call, make_args = worker._call_and_args(workload, "compiled", paths)
    counter = worker.Counter(NoControl(), reps=2, warmup=1, chunks=2)
    counter.backward(call, make_args, "r0", paths.backward_engine("compiled"))  # cached: fine
    with pytest.raises(RuntimeError, match="captured 2 new graph"):
        counter.backward(call, make_args, "r1", uncached)
