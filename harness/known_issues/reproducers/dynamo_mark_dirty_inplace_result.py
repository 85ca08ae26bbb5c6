"""Known torch issue dynamo-mark-dirty-inplace-result (found by the harness; torch only).

A custom autograd.Function that marks an input dirty and returns the result of the in-place
op (`return a.mul_(2)`, which is `a` itself): eager accepts it. torch.compile, when an input
requires grad, raises the graph break "autograd.Function.apply: mark_dirty input not
returned" ("Dynamo only supports ctx.mark_dirty when each dirty input is also returned from
forward"), whose hint suggests the code is wrong in eager too. Writing `a.mul_(2); return a`
compiles: Dynamo does not see that the in-place op returns its input.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
"""
import sys

import torch


class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.mark_dirty(a)
        return a.mul_(2.0), b * 1  # the dirty input, returned as the in-place op's result

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * 2.0, gb


def reproduces(backend):
    torch._dynamo.reset()
    x, y = torch.ones(3), torch.ones(3, requires_grad=True)
    eager = ScaleInPlace.apply(x.clone(), y)
    try:
        torch.compile(lambda x, y: ScaleInPlace.apply(x.clone(), y), backend=backend, fullgraph=True)(x, y)
    except torch._dynamo.exc.Unsupported as e:
        if "mark_dirty input not returned" in str(e):
            print(f"{backend}: REPRODUCED: {str(e).splitlines()[0]} (eager returned {eager[0].tolist()})")
            return True
        raise
    print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
