"""Cost of the compiled paths: examples/s per mode, and the harness's overhead over the raw
cost of compiled autograd (or torch.compile) on the same graphs.

    python -m harness.paths.compiled_bench                      # capture, eager, aot_eager; dynamo
    python -m harness.paths.compiled_bench --paths compiled:inductor --examples 20

For each path, the same deterministic set of generated graphs is run three ways:
  check     the whole example as a campaign runs it: math oracle, eager, the path, the
            comparisons and the lifetime oracle (examples/s);
  harness   the path alone (`path.run(built)`): state reset, hooks, forward AD, recording;
  raw       a minimal script doing only what the compiler is there for: apply the
            Functions, make the loss, and run the spec's backward mode under compiled
            autograd (or call the torch.compile'd forward, then backward).
The overhead ratio is harness / raw, summed over the graphs the path ran (unsupported ones
cost nothing on either side and are left out).

This is wall time, capture included. Exact instruction counts of compiled autograd's
cached backward per Function node, beside the eager engine's, are a `bench` scenario:
``python -m harness bench --scenarios chain --paths eager,compiled --phases backward``
(docs/counts.md).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

DEFAULT_PATHS = ("compiled:capture", "compiled:eager", "compiled:aot_eager", "dynamo:aot_eager")


def draw_specs(count: int, seed: int = 0) -> list:
    """`count` graphs drawn deterministically from `graphs()` (same set on every run)."""
    from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings

    from strategies import graphs

    specs: list = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(graphs())
    def collect(spec: Any) -> None:
        specs.append(spec)

    collect()
    return specs[:count]


def _raw_backward(built: Any, values: dict[str, torch.Tensor], leaves: list[torch.Tensor]) -> None:
    """The spec's backward mode with nothing recorded (mirrors harness.run._backward)."""
    from harness.run import function_output_refs, weighted_sum

    refs = function_output_refs(built)
    weights = dict(zip(refs, built.weights(len(refs))))
    with torch.enable_grad():
        terms = [weighted_sum(values[r], weights[r]) for r in refs if values[r].requires_grad]
    grad_leaves = [t for t in leaves if t.requires_grad]
    if not terms or not grad_leaves:
        return
    loss = sum(terms)
    mode = built.spec.backward
    if mode in ("backward", "retain"):
        loss.backward(retain_graph=mode == "retain")
        if mode == "retain":
            loss.backward()
    elif mode == "grad":
        torch.autograd.grad(loss, grad_leaves, allow_unused=True)
    elif mode == "double":
        grads = torch.autograd.grad(loss, grad_leaves, allow_unused=True, create_graph=True)
        second = [weighted_sum(g, w) for g, w in zip(grads, built.weights(len(grads), offset=2_000_003))
                  if g is not None and g.requires_grad]
        if second:
            torch.autograd.grad(sum(second), grad_leaves, allow_unused=True)


def raw_run(path: Any, built: Any) -> None:
    """The compiler's own work on this graph, without the harness around it."""
    from harness.paths.compiled import CompiledPath, compiler_fn
    from harness.run import forward, leaf_values
    from harness.paths.eager import apply_eager

    leaves = built.make_leaves()
    with contextlib.suppress(Exception):  # known torch bugs raise here as in the harness
        if isinstance(path, CompiledPath):
            from torch._dynamo import compiled_autograd

            with torch.enable_grad():
                values = forward(built, apply_eager, leaves, {})
            with compiled_autograd._enable(compiler_fn(path.mode)):
                _raw_backward(built, values, leaves)
        else:
            inputs = leaf_values(built, leaves)
            refs = [r for r in built.spec.value_refs() if r.startswith("f")]

            def whole(*xs: torch.Tensor) -> tuple:
                it = iter(xs)
                grouped = [tuple(next(it) for _ in range(leaf.views)) if leaf.views else next(it)
                           for leaf in built.spec.leaves]
                vals = forward(built, apply_eager, grouped, {})
                return tuple(vals[r] for r in refs)

            compiled = torch.compile(whole, backend=path.backend, fullgraph=True)
            with torch.enable_grad():
                values = dict(zip(refs, compiled(*inputs.values())))
            _raw_backward(built, values, leaves)


@dataclass
class Row:
    path: str
    examples: int = 0
    ran: int = 0
    check_s: float = 0.0
    harness_s: float = 0.0
    raw_s: float = 0.0
    #: the same sums over the graphs the path ran without error (no known bug cut them short)
    clean: int = 0
    clean_harness_s: float = 0.0
    clean_raw_s: float = 0.0

    @property
    def examples_per_s(self) -> float:
        return self.examples / self.check_s if self.check_s else 0.0

    @property
    def ratio(self) -> float:
        return self.harness_s / self.raw_s if self.raw_s else float("nan")

    @property
    def clean_ratio(self) -> float:
        return self.clean_harness_s / self.clean_raw_s if self.clean_raw_s else float("nan")


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall time of fn() with gc off (the lifetime oracle runs paths with gc off, which
    would otherwise favour the harness side), collected afterwards, untimed."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()


def bench_path(name: str, specs: list, *, lifetimes: bool = True) -> Row:
    from harness import paths
    from harness.build import build
    from harness.check import check
    from harness.paths.compiled import reset_compile_state
    from harness.oracles.lifetimes import tracking_lifetimes

    path = paths.get(name)
    path = getattr(path, "resolved", lambda: path)()
    row = Row(path.name)
    check(specs[0], [path], lifetimes=lifetimes)  # warm-up: imports, first compile
    # as campaigns do: what is imported by now is frozen out of the collector, so neither
    # side pays for full collections of torch's objects (~80 ms each, design.md)
    gc.collect()
    gc.freeze()
    for i, spec in enumerate(specs):
        row.examples += 1
        row.check_s += _timed(lambda: check(spec, [path], lifetimes=lifetimes))[0]
        if path.unsupported(spec) is not None:
            continue
        built = build(spec)
        # alternate the order, so that neither side always runs on a warmer process
        order = ("raw", "harness") if i % 2 else ("harness", "raw")
        for side in order:
            if side == "raw":
                reset_compile_state()  # untimed: the raw script starts as fresh as the harness
                raw_s, _ = _timed(lambda: raw_run(path, built))
            else:
                with tracking_lifetimes(lifetimes):
                    harness_s, result = _timed(lambda: path.run(built))
        if result.status == "unsupported":  # found out while running (a documented graph break)
            continue
        row.ran += 1
        row.raw_s += raw_s
        row.harness_s += harness_s
        if result.status == "ok":
            row.clean += 1
            row.clean_raw_s += raw_s
            row.clean_harness_s += harness_s
    return row


def render(rows: list[Row]) -> str:
    lines = [f"{'path':<20} {'examples':>8} {'examples/s':>11} {'ran':>5} {'raw ms':>8} {'harness ms':>11} "
             f"{'harness/raw':>12} {'ran ok':>7} {'raw ms':>8} {'harness ms':>11} {'harness/raw':>12}"]
    for r in rows:
        def ms(total: float, n: int) -> float:
            return 1000 * total / n if n else 0.0
        lines.append(f"{r.path:<20} {r.examples:>8} {r.examples_per_s:>11.2f} {r.ran:>5} {ms(r.raw_s, r.ran):>8.1f} "
                     f"{ms(r.harness_s, r.ran):>11.1f} {r.ratio:>12.3f} {r.clean:>7} "
                     f"{ms(r.clean_raw_s, r.clean):>8.1f} {ms(r.clean_harness_s, r.clean):>11.1f} "
                     f"{r.clean_ratio:>12.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.paths.compiled_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default=",".join(DEFAULT_PATHS),
                        help=f"comma-separated compiled paths (default: {','.join(DEFAULT_PATHS)})")
    parser.add_argument("--examples", type=int, default=40, help="graphs per path (default 40)")
    parser.add_argument("--seed", type=int, default=0, help="which deterministic set of graphs")
    parser.add_argument("--no-lifetimes", action="store_true", help="leave the lifetime oracle out")
    args = parser.parse_args(argv)
    if args.examples < 1:
        raise SystemExit(f"error: --examples {args.examples} must be at least 1.")
    from harness import paths

    try:
        names = [p.strip() for p in args.paths.split(",") if p.strip()]
        for name in names:
            why = paths.get(name).available()
            if why is not None:
                raise SystemExit(f"error: path {name!r} cannot run here: {why}")
    except paths.UnknownPathError as e:
        raise SystemExit(f"error: {e}") from None
    specs = draw_specs(args.examples, args.seed)
    rows = []
    for name in names:
        rows.append(bench_path(name, specs, lifetimes=not args.no_lifetimes))
        print(render(rows[-1:]) if len(rows) == 1 else render(rows[-1:]).splitlines()[1], flush=True)
    print()
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
