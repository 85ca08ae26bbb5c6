"""torch.compile of torch.func.jvp over a custom Function ignores its jvp: it differentiates the inlined forward.
Usage: python repro.py [eager|aot_eager|inductor]"""
import sys
import torch
from torch.func import jvp

backend = (sys.argv[1:] or ["eager"])[0]

class SinWithOwnJvp(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.sin()
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def backward(ctx, g):
        return g * 100
    @staticmethod
    def jvp(ctx, t):
        return t * 100  # deliberately not sin's derivative, so that it shows whether it is called

def run(f):
    try:
        return f"tangent {f(torch.zeros(3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

def f(x):
    return jvp(SinWithOwnJvp.apply, (x,), (torch.ones_like(x),))[1]

expected, observed = run(f), run(torch.compile(f, backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed == "tangent [1.0, 1.0, 1.0]" else 0)
