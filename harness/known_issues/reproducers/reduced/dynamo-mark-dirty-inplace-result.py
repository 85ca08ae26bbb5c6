"""torch.compile(fullgraph=True) rejects a custom Function returning its dirty input as the in-place op's result (a.mul_(2)).
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.mark_dirty(a)
        return a.mul_(2.0), b * 1  # a.mul_(2.0) is a; `a.mul_(2.0); return a, b * 1` compiles
    @staticmethod
    def backward(ctx, ga, gb):
        return ga * 2.0, gb

def run(f):
    try:
        return f"returned {f(torch.ones(3), torch.ones(3, requires_grad=True))[0].tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(lambda x, y: ScaleInPlace.apply(x.clone(), y))
observed = run(torch.compile(lambda x, y: ScaleInPlace.apply(x.clone(), y), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "mark_dirty" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
