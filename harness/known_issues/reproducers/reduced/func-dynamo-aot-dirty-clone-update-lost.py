"""torch.func.grad of torch.compile loses a custom Function's in-place update of a clone it marked dirty.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch
from torch.func import grad

backend = (sys.argv[1:] or ["aot_eager"])[0]

class Dirty(torch.autograd.Function):
    @staticmethod
    def forward(x, c):
        c.mul_(-1.5)
        return c
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[1])
    @staticmethod
    def backward(ctx, g):
        return None, g * -1.5

def f(x, y):
    out = Dirty.apply(y, x.clone())  # the clone is made inside the compiled function
    return (out * y).sum(), out

x, y = torch.tensor(0.7, dtype=torch.float64), torch.tensor(0.3, dtype=torch.float64)
expected = grad(f, argnums=1, has_aux=True)(x, y)[1].item()
observed = grad(torch.compile(f, backend=backend), argnums=1, has_aux=True)(x, y)[1].item()
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if abs(observed - expected) > 1e-12 else 0)
