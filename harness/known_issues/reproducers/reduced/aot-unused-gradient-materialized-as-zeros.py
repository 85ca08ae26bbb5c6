"""torch.compile (AOT backends): a leaf whose clone a custom Function (run after a graph break) sends None gets zeros, not None.
Usage: python repro.py [aot_eager|eager|inductor] [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

backend = (sys.argv[1:] or ["aot_eager"])[0]
ca = compiled_autograd._enable(torch.compile(backend=backend)) if "ca" in sys.argv else torch.enable_grad()

class UsesOnlyTheFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        print(end="")  # a graph break: the Function runs eagerly
        return a.view_as(a)
    @staticmethod
    def backward(ctx, g):
        return g, None  # no gradient for b (documented as allowed)

def f(x, y):
    return UsesOnlyTheFirst.apply(y, x.clone())  # x.clone() is computed in the compiled region

def x_grad(f, ctx=torch.enable_grad()):
    x, y = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    with ctx:
        gx, gy = torch.autograd.grad(f(x, y).sum(), [x, y], allow_unused=True)
    return f"gradient of x: {None if gx is None else gx.tolist()}"

expected, observed = x_grad(f), x_grad(torch.compile(f, backend=backend), ca)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
