"""Compiled autograd: a custom Function whose backward returns None for an input it got twice raises TypeError.
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class AddNoGradForFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b
    @staticmethod
    def backward(ctx, g):
        return None, g  # None: no gradient for `a` (documented as allowed)

def x_grad(compiled):
    x = torch.ones(3, requires_grad=True)
    loss = AddNoGradForFirst.apply(x, x).sum()  # the same tensor twice
    try:
        with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
            loss.backward()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return f"x.grad = {x.grad.tolist()}"

expected, observed = x_grad(compiled=False), x_grad(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "NoneType" in observed or "fake tensor" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
