"""Compiled autograd raises a bare StopIteration for a node pre-hook on a custom Function whose first output is not a tensor.
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class ConstThenTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return None, a * 2  # the first output is not a tensor
    @staticmethod
    def backward(ctx, g_none, g):
        return g * 2

def x_grad(compiled):
    x = torch.ones(3, requires_grad=True)
    _, y = ConstThenTensor.apply(x)
    y.grad_fn.register_prehook(lambda grad_outputs: None)
    try:
        with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
            y.sum().backward()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return f"x.grad = {x.grad.tolist()}"

expected, observed = x_grad(compiled=False), x_grad(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "StopIteration" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
