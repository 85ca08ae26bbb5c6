"""torch.compile(fullgraph=True) fails on a custom Function that returns a non-tensor before the input it marks dirty.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        x.mul_(2.0)
        ctx.mark_dirty(x)
        return 7, x, y.view_as(y)  # a non-tensor output first
    @staticmethod
    def backward(ctx, g_const, gx, gy):
        return gx * 2.0, gy

def f(leaf):
    _, a, b = ScaleInPlace.apply(leaf.clone(), leaf.clone())
    return a + b

def run(f):
    try:
        return f"returned {f(torch.tensor([1.0, 2.0, 3.0], requires_grad=True)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected, observed = run(f), run(torch.compile(f, backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "in-place" in observed or "not an input" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
