"""Compiled autograd passes None to a custom Function's backward where eager materializes zeros (materialize_grads).
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class Receiver(torch.autograd.Function):  # materialize_grads=True, the default
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3
    @staticmethod
    def backward(ctx, g0, g1):
        return g0 * 2 + g1 * 3  # eager gives zeros for a None output gradient

class Sender(torch.autograd.Function):
    @staticmethod
    def forward(ctx, b, y):
        return y * 2
    @staticmethod
    def backward(ctx, g):
        return None, g * 2  # None for `b`, Receiver's second output

def x_grad(compiled):
    a, b = Receiver.apply(x := torch.ones(3, requires_grad=True))
    loss = a.sum() + Sender.apply(b, torch.ones(3, requires_grad=True)).sum()
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
