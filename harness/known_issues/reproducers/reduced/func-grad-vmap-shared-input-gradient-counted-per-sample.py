"""torch.func.grad of vmap over a custom Function (generate_vmap_rule=True) counts an unbatched output's gradient of a shared input once per sample."""
import torch
from torch.func import grad, vmap

class F(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, m):
        return x * m, x * 2.0  # under vmap the second output has no batch dim (x is shared)
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[1])
    @staticmethod
    def backward(ctx, g0, g1):
        (m,) = ctx.saved_tensors
        return g0 * m + g1 * 2.0, None

def loss(x, m):
    a, b = F.apply(x, m)
    return a + b

def eager_gradient(x, m):
    x = x.clone().requires_grad_()
    return torch.autograd.grad(loss(x, m), x)[0]

x, m = torch.tensor(0.5), torch.tensor([1.0, 2.0, 3.0])  # x shared by the batch (in_dims=None)
expected = sum(eager_gradient(x, mi) for mi in m).item()  # per sample, in eager, summed
observed = grad(lambda x: vmap(loss, in_dims=(None, 0))(x, m).sum())(x).item()
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if abs(observed - expected) > 1e-6 else 0)
