"""torch.compile: a custom Function run eagerly after a graph break cannot mark_dirty a view made in the compiled region.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, view, weight):
        print(end="")  # a graph break: the Function runs eagerly
        ctx.mark_dirty(view)
        return view.mul_(2)
    @staticmethod
    def backward(ctx, grad):
        return grad * 2, None

def f(a, weight):
    return ScaleInPlace.apply(a.clone().view_as(a), weight)  # a view of a tensor that does not require grad

def run(f):
    try:
        return f"returned {f(torch.ones(3), torch.ones(3, requires_grad=True)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected, observed = run(f), run(torch.compile(f, backend=backend))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "no_grad mode" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
