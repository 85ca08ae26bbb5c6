"""A custom Function that modifies in place (mark_dirty) a view that is not its first input gets wrong gradients.
Usage: python repro.py [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

ca = compiled_autograd._enable(lambda gm: gm) if "ca" in sys.argv else torch.enable_grad()

class ScaleSecondInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, other, x):
        ctx.mark_dirty(x)
        return x.mul_(2.0)
    @staticmethod
    def backward(ctx, grad):
        return grad * 5.0, grad * 2.0  # d/d other (as the Function claims), d/d x

leaf, other = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
base = leaf.clone()
loss = ScaleSecondInPlace.apply(other, base.view_as(base)).sum()  # a view, as the second input
try:
    with ca:
        loss.backward()
    observed = f"leaf.grad = {leaf.grad.tolist()}, other.grad = {None if other.grad is None else other.grad.tolist()}"
except Exception as e:  # what it raises is the observation
    observed = f"{type(e).__name__}: " + str(e).partition("\n")[0][:200]
expected = "leaf.grad = [2.0, 2.0, 2.0], other.grad = [5.0, 5.0, 5.0]"  # what backward returns
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
