"""Wall-time microbenchmark of one Function.apply: eager vs owned vs borrowed.

The seed scenario: a Function with N tensor inputs (all requiring grad) that
returns 2 of them and saves nothing; only the forward ``apply`` is timed, and
its outputs are dropped each iteration. With fewer inputs than outputs, the
missing outputs are preallocated constant tensors. All three paths run side by
side in one process with ``torch.utils.benchmark.Timer.blocked_autorange``.

``eager`` calls ``cls.apply(*args)``; ``owned``/``borrowed`` call the
extension's entry points directly (what ``harness.native.apply`` calls after its
argument checks), so the two native columns differ only in the input holder.

Run: ``python -m harness.microbench``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.benchmark import Timer

from harness import native

__all__ = ["Row", "format_table", "make_function", "run"]

PATHS = ("eager", *native.HOLDERS)


@dataclass(frozen=True)
class Row:
    """Median wall time per apply, in microseconds, for one (inputs, outputs) case."""

    inputs: int
    outputs: int
    eager_us: float
    owned_us: float
    borrowed_us: float

    @property
    def borrowed_vs_owned(self) -> float:
        """Relative change of borrowed against owned (negative: borrowed is faster)."""
        return self.borrowed_us / self.owned_us - 1.0


def make_function(num_outputs: int) -> type[torch.autograd.Function]:
    """A Function returning its first ``num_outputs`` inputs (padded with constants)."""
    padding = tuple(torch.zeros(1) for _ in range(num_outputs))

    class ReturnInputs(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return (args + padding)[:num_outputs]

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
            n = len(ctx.needs_input_grad)
            return (grads + (None,) * n)[:n]

    return ReturnInputs


_STATEMENTS = {
    "eager": "cls.apply(*args)",
    "owned": "apply_owned(cls, args)",
    "borrowed": "apply_borrowed(cls, args)",
}


def run(
    inputs: Sequence[int] = (0, 8, 13, 24, 25, 32),
    outputs: int = 2,
    *,
    min_run_time: float = 0.2,
    rounds: int = 3,
) -> list[Row]:
    """Time one apply per path for each input count; returns one Row per count."""
    ext = native._extension()
    rows = []
    for num_inputs in inputs:
        env = {
            "cls": make_function(outputs),
            "args": tuple(torch.randn(1, requires_grad=True) for _ in range(num_inputs)),
            "apply_owned": ext.apply_owned,
            "apply_borrowed": ext.apply_borrowed,
        }
        timers = {
            path: Timer(stmt=stmt, globals=env, num_threads=1) for path, stmt in _STATEMENTS.items()
        }
        best = dict.fromkeys(timers, float("inf"))
        for _ in range(rounds):
            for path, timer in timers.items():
                median = timer.blocked_autorange(min_run_time=min_run_time).median
                best[path] = min(best[path], median * 1e6)
        rows.append(Row(num_inputs, outputs, best["eager"], best["owned"], best["borrowed"]))
    return rows


def format_table(rows: Sequence[Row]) -> str:
    """Render rows as an aligned plain-text table."""
    header = ("inputs", "outputs", "eager us", "owned us", "borrowed us", "borrowed/owned")
    body = [
        (
            str(r.inputs),
            str(r.outputs),
            f"{r.eager_us:.2f}",
            f"{r.owned_us:.2f}",
            f"{r.borrowed_us:.2f}",
            f"{r.borrowed_vs_owned * 100:+.1f}%",
        )
        for r in rows
    ]
    widths = [max(len(cell) for cell in column) for column in zip(header, *body)]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in (header, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.microbench", description=__doc__)
    parser.add_argument("--inputs", type=int, nargs="+", default=[0, 8, 13, 24, 25, 32])
    parser.add_argument("--outputs", type=int, default=2)
    parser.add_argument("--min-run-time", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args(argv)
    info = native.info()
    print(
        f"torch {torch.__version__}; borrowed passes ArrayRef to _wrap_outputs: "
        f"{info.borrowed_uses_arrayref}"
    )
    rows = run(opts.inputs, opts.outputs, min_run_time=opts.min_run_time, rounds=opts.rounds)
    print(format_table(rows))


if __name__ == "__main__":
    main()
