"""torch.compile: a custom Function returning an input as-is returns the input itself, where eager returns a view of it.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class ReturnFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a  # an input returned as-is: eager returns a.view_as(a)
    @staticmethod
    def backward(ctx, g):
        return g, None

def identity(f):
    x, y = torch.ones(3), torch.ones(3)  # no input requires grad
    out = f(x, y)
    return f"out is x: {out is x}, out._base is x: {out._base is x}"

expected = identity(ReturnFirst.apply)
observed = identity(torch.compile(lambda a, b: ReturnFirst.apply(a, b), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
