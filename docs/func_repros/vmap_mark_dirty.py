import torch
from torch.func import vmap

class ScaleInPlace(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.mul_(2)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])

    @staticmethod
    def backward(ctx, g):
        return g * 2

print("eager:", ScaleInPlace.apply(torch.ones(3)))
print("grad:", torch.func.grad(lambda x: ScaleInPlace.apply(x.clone()).sum())(torch.ones(3)))
print("vmap:", vmap(lambda x: ScaleInPlace.apply(x.clone()))(torch.ones(2, 3)))
