"""torch.compile of torch.func.grad over a custom Function with a Python side effect fails: 'Expected FakeTensor'.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch
from torch.func import grad

backend = (sys.argv[1:] or ["aot_eager"])[0]
calls = []

class Double(torch.autograd.Function):
    @staticmethod
    def forward(a):
        calls.append("forward")  # a Python side effect
        return a * 2
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def backward(ctx, g):
        return g * 2

def run(f):
    try:
        return f"gradient {f(torch.ones(3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

f = grad(lambda x: Double.apply(x * 2).sum())  # applied to a tensor computed inside the transform
expected, observed = run(f), run(torch.compile(f, backend=backend))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "Expected FakeTensor" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
