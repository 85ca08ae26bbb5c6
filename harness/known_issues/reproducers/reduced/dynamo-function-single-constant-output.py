"""torch.compile(fullgraph=True) fails on a custom Function whose forward returns one non-tensor value (TypeError: not iterable).
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class ReturnsConstant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return 1  # one non-tensor output, not a tuple: (1,) compiles
    @staticmethod
    def backward(ctx, g):
        return None

def run(f):
    try:
        return f"returned {f(torch.ones(3, requires_grad=True))!r}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(lambda x: ReturnsConstant.apply(x))
observed = run(torch.compile(lambda x: ReturnsConstant.apply(x), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "not iterable" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
