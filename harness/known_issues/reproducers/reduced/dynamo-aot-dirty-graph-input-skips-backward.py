"""torch.compile (AOT backends) skips a custom Function's backward for an input of the compiled frame that it marks dirty.
Usage: python repro.py [aot_eager|eager|inductor] [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

backend = (sys.argv[1:] or ["aot_eager"])[0]
ca = compiled_autograd._enable(torch.compile(backend=backend)) if "ca" in sys.argv else torch.enable_grad()

class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, w):
        a.mul_(3.0)
        ctx.mark_dirty(a)
        return a, w * 1.0
    @staticmethod
    def backward(ctx, ga, gw):
        return ga * 3.0, ga + gw

def gradients(f, ctx=torch.enable_grad()):
    x, w = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    a, b = f(x.clone(), w)  # the clone is made outside the compiled frame
    with ctx:
        (a.sum() + b.sum()).backward()
    return f"x.grad = {x.grad.tolist()}, w.grad = {w.grad.tolist()}"

expected = gradients(ScaleInPlace.apply)
observed = gradients(torch.compile(lambda a, w: ScaleInPlace.apply(a, w), backend=backend, fullgraph=True), ca)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
