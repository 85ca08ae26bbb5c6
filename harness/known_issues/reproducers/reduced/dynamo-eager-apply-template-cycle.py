"""torch.compile(backend='eager') keeps a custom Function's saved tensors in a reference cycle: they live until gc.collect().
Usage: python repro.py [eager|aot_eager|inductor]"""
import gc
import sys
import torch

backend = (sys.argv[1:] or ["eager"])[0]

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a
    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2.0 * g * a

def alive_until_gc(f):
    gc.collect()
    gc.disable()  # the cycle must not be collected behind our back
    leaf = torch.randn(3, dtype=torch.float64, requires_grad=True)
    ref = torch._C._WeakTensorRef(leaf)
    f(leaf).sum().backward()
    del leaf
    alive = not ref.expired()
    gc.enable()
    gc.collect()
    return f"the leaf (saved by the Function) is alive after its last reference was dropped: {alive}; after gc.collect(): {not ref.expired()}"

expected = alive_until_gc(Square.apply)
observed = alive_until_gc(torch.compile(lambda a: Square.apply(a), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
