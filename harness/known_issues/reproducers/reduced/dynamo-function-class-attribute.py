"""torch.compile(fullgraph=True) cannot trace a custom Function whose forward reads its own class attribute.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class Scale(torch.autograd.Function):
    factor = 2.0  # a plain class attribute (a flag, a config value)

    @staticmethod
    def forward(ctx, a):
        return a * Scale.factor
    @staticmethod
    def backward(ctx, g):
        return g * Scale.factor

def run(f):
    try:
        return f"returned {f(torch.ones(3, requires_grad=True)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(lambda x: Scale.apply(x))
observed = run(torch.compile(lambda x: Scale.apply(x), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "python_type" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
