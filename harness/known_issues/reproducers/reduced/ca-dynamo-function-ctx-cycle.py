"""Compiled autograd + torch.compile leaves a custom Function's ctx in a reference cycle: its leaves live until gc.collect().
Usage: python repro.py [aot_eager|eager|inductor|capture]"""
import gc
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["aot_eager"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2.0
    @staticmethod
    def backward(ctx, g):
        return g * 2.0

def alive_until_gc(compiled):
    gc.collect()
    gc.disable()  # the cycle must not be collected behind our back
    leaf = torch.randn(3, dtype=torch.float64, requires_grad=True)
    ref, loss = torch._C._WeakTensorRef(leaf), Double.apply(leaf).sum()
    with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
        loss.backward()
    del loss, leaf
    alive = not ref.expired()
    gc.enable()
    return f"the leaf is alive after its last reference was dropped (gc disabled): {alive}"

expected, observed = alive_until_gc(compiled=False), alive_until_gc(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
