"""Compiled autograd accepts a custom Function's gradient for a non-tensor input, which eager autograd rejects.
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class GradientForInt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, k):
        return a * k
    @staticmethod
    def backward(ctx, g):
        return g * 2, torch.ones(())  # a gradient for the int `k`: invalid

def backward(compiled):
    x = torch.ones(3, requires_grad=True)
    loss = GradientForInt.apply(x, 2).sum()
    try:
        with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
            loss.backward()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return f"no error, x.grad = {x.grad.tolist()}"

expected, observed = backward(compiled=False), backward(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or observed.startswith("no error"), "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
