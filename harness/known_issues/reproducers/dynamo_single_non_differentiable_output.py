"""Candidate torch issue (found by the harness with a plain-style Function; torch only).

torch.compile of a custom autograd.Function whose forward returns ONE tensor (not a
tuple) and marks it non-differentiable with ctx.mark_non_differentiable fails inside
Dynamo with "AssertionError: Expected fwd_out to be a BaseListVariable", with
fullgraph=True and with fullgraph=False alike (no graph break, no eager fallback).
Eager runs it and returns an output with requires_grad=False; the same Function
returning `(out,)` compiles fine.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
"""
import sys

import torch


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        out = a * 2
        ctx.mark_non_differentiable(out)
        return out  # a single tensor, not a tuple

    @staticmethod
    def backward(ctx, g):
        return g * 2


def reproduces(backend, fullgraph):
    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    assert Doubled.apply(x).requires_grad is False  # eager
    f = torch.compile(lambda x: Doubled.apply(x), backend=backend, fullgraph=fullgraph)
    try:
        f(x)
    except Exception as e:  # Dynamo re-raises its internal assertion, possibly wrapped
        if "Expected fwd_out to be a BaseListVariable" in str(e):
            print(f"{backend} fullgraph={fullgraph}: REPRODUCED: {type(e).__name__}: {str(e).splitlines()[0]}")
            return True
        raise
    print(f"{backend} fullgraph={fullgraph}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
    results = [reproduces(backend, fullgraph) for fullgraph in (True, False)]
    raise SystemExit(1 if results[0] else 0)
