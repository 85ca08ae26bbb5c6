"""A custom Function that modifies a view in place (mark_dirty) gets its wrong-shaped gradient broadcast, not rejected.
Usage: python repro.py [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

ca = compiled_autograd._enable(lambda gm: gm) if "ca" in sys.argv else torch.enable_grad()

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x
    @staticmethod
    def backward(ctx, g):
        return g.sum().reshape(1)  # the wrong shape, (1,) for (3,): invalid

def backward(as_view, ctx=torch.enable_grad()):
    leaf = torch.ones(2, 3, requires_grad=True)
    base = leaf.clone()
    Scale.apply(base[0] if as_view else base)  # base[0] is a view
    try:
        with ctx:
            base.sum().backward()
    except RuntimeError as e:
        return "RuntimeError: " + str(e).partition("\n")[0][:200]
    return f"no error, leaf.grad = {leaf.grad.tolist()}"

expected = "as for a non-view input, " + backward(as_view=False)
observed = backward(as_view=True, ctx=ca)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if "invalid gradient" not in observed else 0)
