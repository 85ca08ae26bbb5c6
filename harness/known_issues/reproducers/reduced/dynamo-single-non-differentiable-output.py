"""torch.compile fails with an internal AssertionError on a custom Function returning one tensor marked non-differentiable.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        out = a * 2
        ctx.mark_non_differentiable(out)
        return out  # one tensor, not a tuple: (out,) compiles
    @staticmethod
    def backward(ctx, g):
        return g * 2

def run(f):
    try:
        out = f(torch.ones(3, requires_grad=True))
        return f"returned {out.tolist()}, requires_grad={out.requires_grad}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(lambda x: Doubled.apply(x))
observed = run(torch.compile(lambda x: Doubled.apply(x), backend=backend))  # fullgraph=False: no fallback either
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "BaseListVariable" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
