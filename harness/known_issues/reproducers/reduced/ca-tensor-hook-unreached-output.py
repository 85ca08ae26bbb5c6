"""Compiled autograd raises AttributeError for a tensor hook on a custom Function output that gets no gradient.
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3
    @staticmethod
    def backward(ctx, g0, g1):
        return g0 * 2 + g1 * 3  # torch materializes the missing g1 as zeros

def x_grad(compiled):
    x = torch.ones(3, requires_grad=True)
    a, b = TwoOutputs.apply(x)
    b.register_hook(lambda g: g)  # b is not in the loss: eager calls the hook with None
    try:
        with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
            a.sum().backward()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return f"x.grad = {x.grad.tolist()}"

expected, observed = x_grad(compiled=False), x_grad(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "'op'" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
