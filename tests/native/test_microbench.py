"""The microbenchmark runs and renders (timings themselves are not asserted)."""

from __future__ import annotations

import harness.microbench as microbench


def test_run_and_format(native):
    rows = microbench.run(inputs=(0, 3), outputs=2, min_run_time=0.01, rounds=1)
    assert [(r.inputs, r.outputs) for r in rows] == [(0, 2), (3, 2)]
    assert all(r.eager_us > 0 and r.owned_us > 0 and r.borrowed_us > 0 for r in rows)
    table = microbench.format_table(rows)
    lines = table.splitlines()
    assert lines[0].split() == [
        *("inputs", "outputs", "eager", "us", "owned", "us", "borrowed", "us", "borrowed/owned")
    ]
    assert len(lines) == 4


def test_benchmark_function_returns_its_inputs(apply_on):
    import torch

    cls = microbench.make_function(2)
    args = tuple(torch.randn(1, requires_grad=True) for _ in range(13))
    for path in ("eager", "owned", "borrowed"):
        a, b = apply_on(path, cls, *args)
        assert a._base is args[0] and b._base is args[1]  # returned as-is: a view_as
