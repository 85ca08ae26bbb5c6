"""torch.compile: retain_grad() on a compiled region's output that the region also uses inside gives a partial .grad.
Usage: python repro.py [aot_eager|eager|inductor] [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

backend = (sys.argv[1:] or ["aot_eager"])[0]
ca = compiled_autograd._enable(torch.compile(backend=backend)) if "ca" in sys.argv else torch.enable_grad()

class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2
    @staticmethod
    def backward(ctx, g):
        return g * 2

def region(x):
    y = Double.apply(x)
    return y, Double.apply(y)  # y is an output and is used inside

def y_grad(f, ctx=torch.enable_grad()):
    y, z = f(torch.ones(3, requires_grad=True))
    y.retain_grad()
    with ctx:
        (y.sum() + z.sum()).backward()
    return f"y.grad = {y.grad.tolist()}"

expected = y_grad(region)
observed = y_grad(torch.compile(region, backend=backend, fullgraph=True), ca)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
