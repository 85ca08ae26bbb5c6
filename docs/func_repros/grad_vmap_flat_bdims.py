# grad over vmap of a generate_vmap_rule Function that saves its output for backward and an
# input for forward AD: AssertionError "flat_bdims must not be None" (torch 2.13.0+cpu)
import torch
from torch.func import grad, vmap

class Sin(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a, b):
        return -2 * torch.sin(a)  # b is read by nothing

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        ctx.save_for_backward(a, output)
        ctx.save_for_forward(a)

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        return g * -2 * torch.cos(a), None

    @staticmethod
    def jvp(ctx, ta, tb):
        (a,) = ctx.saved_tensors
        return -2 * torch.cos(a) * ta

a, b = torch.randn(3), torch.randn(3)
print("grad:", grad(lambda b: Sin.apply(a, b).sum())(b))
print("vmap(grad):", vmap(grad(lambda a, b: Sin.apply(a, b).sum(), argnums=1))(a, b))
print("grad(vmap):", grad(lambda b: vmap(Sin.apply)(a, b).sum())(b))  # AssertionError
