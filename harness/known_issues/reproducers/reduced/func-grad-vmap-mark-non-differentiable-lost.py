"""torch.func.grad(vmap(f)) loses ctx.mark_non_differentiable of a custom Function (generate_vmap_rule=True): wrong gradient."""
import torch
from torch.func import grad, vmap

class MarkedFirst(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * 2, x * 3
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[0])
    @staticmethod
    def backward(ctx, g_marked, g):
        return g * 3 + g_marked * 100  # autograd gives a marked output zeros

def loss(x):
    marked, y = MarkedFirst.apply(x)
    return (marked * x).sum() + y.sum()  # d/dx = marked (a constant) + 3 = 5

xs = torch.ones(2, 3)
expected = f"gradient {vmap(grad(loss))(xs).tolist()}"  # as eager autograd and grad alone
observed = f"gradient {grad(lambda xs: vmap(loss)(xs).sum())(xs).tolist()}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
