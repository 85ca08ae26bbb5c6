"""Compiled autograd + torch.compile cannot trace a custom Function backward reading a class attribute ('Unsupported python_type() call').
Usage: python repro.py [aot_eager|eager|inductor|capture]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["aot_eager"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)
class Scale(torch.autograd.Function):
    factor = 2.0  # a plain class attribute

    @staticmethod
    def forward(ctx, a):
        return a * 2.0
    @staticmethod
    def backward(ctx, g):
        return g * Scale.factor

def x_grad(compiled):
    x = torch.ones(3, requires_grad=True)
    loss = Scale.apply(x).sum()
    try:
        with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
            loss.backward()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return f"x.grad = {x.grad.tolist()}"

expected, observed = x_grad(compiled=False), x_grad(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "python_type" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
