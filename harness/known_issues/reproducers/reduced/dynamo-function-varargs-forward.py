"""torch.compile(fullgraph=True) binds the inputs of a custom Function's forward(ctx, *args) shifted by one: IndexError.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class SecondOfArgs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, *args):
        return args[1] * 1
    @staticmethod
    def backward(ctx, g):
        return None, g

def run(f):
    try:
        return f"returned {f(torch.tensor(1.0), torch.tensor(2.0)).item()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(lambda a, b: SecondOfArgs.apply(a, b))
observed = run(torch.compile(lambda a, b: SecondOfArgs.apply(a, b), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "index out of range" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
