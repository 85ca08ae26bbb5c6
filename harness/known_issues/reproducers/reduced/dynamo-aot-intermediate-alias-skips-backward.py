"""torch.compile (AOT backends) skips a custom Function's backward for its two views of an intermediate: wrong gradients.
Usage: python repro.py [aot_eager|eager|inductor] [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

backend = (sys.argv[1:] or ["aot_eager"])[0]
ca = compiled_autograd._enable(torch.compile(backend=backend)) if "ca" in sys.argv else torch.enable_grad()

class TwoViews(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x):
        return a.view_as(a), a.view_as(a)
    @staticmethod
    def backward(ctx, g0, g1):
        return (g0 + g1) * 5, (g0 + g1) * 7

def region(x, w):
    return TwoViews.apply(w * 3, x)  # w * 3: an intermediate of the compiled region

def gradients(f, ctx=torch.enable_grad()):
    x, w = torch.ones((), requires_grad=True), torch.ones((), requires_grad=True)
    v0, v1 = f(x, w)
    with ctx:
        (v0 + v1).backward()
    return f"x.grad = {x.grad}, w.grad = {w.grad}"

expected = gradients(region)
observed = gradients(torch.compile(region, backend=backend, fullgraph=True), ca)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
