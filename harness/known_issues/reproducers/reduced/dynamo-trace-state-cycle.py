"""torch.compile keeps the inputs of a frame it skipped (a graph break in an enumerate loop) alive until gc.collect().
Usage: python repro.py [aot_eager|eager|inductor]"""
import gc
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class DoubleWithJvp(torch.autograd.Function):  # Dynamo graph-breaks on a user jvp
    @staticmethod
    def forward(ctx, a):
        return a * 2.0
    @staticmethod
    def backward(ctx, g):
        return g * 2.0
    @staticmethod
    def jvp(ctx, t):
        return t * 2.0

def loop(xs):
    return [DoubleWithJvp.apply(x) for i, x in enumerate(xs)]

def alive_until_gc(f):
    gc.collect()
    gc.disable()  # the cycle must not be collected behind our back
    xs = [torch.randn(3, requires_grad=True)]
    ref, outs = torch._C._WeakTensorRef(xs[0]), f(xs)
    del outs, xs
    alive = not ref.expired()
    gc.enable()
    return f"the input is alive after its last reference was dropped (gc disabled): {alive}"

expected, observed = alive_until_gc(loop), alive_until_gc(torch.compile(loop, backend=backend))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
