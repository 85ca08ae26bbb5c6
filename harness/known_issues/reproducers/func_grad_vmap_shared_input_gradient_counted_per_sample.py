"""Known torch issue func-grad-vmap-shared-input-gradient-counted-per-sample (found by the harness; torch only).

torch.func.grad over vmap of a custom Function with generate_vmap_rule=True, given an input the
batch shares (in_dims=None) that two outputs read: `x * m` (batched: m is) and `x * 2` (not). The
vmapped backward gets the second output's gradient as the batch's total, adds it to every sample's
gradient of x, and reductify then sums the samples: that share is counted batch-size times.

Exit status 1 and "REPRODUCED" while the gradient is wrong; 0 when fixed.
"""
import torch
from torch.func import grad, vmap


class F(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, m):
        return x * m, x * 2.0  # the second output reads only the shared x: no batch dim under vmap

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


x = torch.tensor(0.5)                # shared by the batch
m = torch.tensor([1.0, 2.0, 3.0])    # batched


def eager_gradient(mi):
    xi = x.clone().requires_grad_()
    return torch.autograd.grad(loss(xi, mi), xi)[0]


expected = sum(eager_gradient(mi) for mi in m)  # 12: (1 + 2) + (2 + 2) + (3 + 2)
observed = grad(lambda x: vmap(loss, in_dims=(None, 0))(x, m).sum())(x)
print(f"expected {float(expected)} (the sum of the per-sample gradients), observed {float(observed)}",
      torch.__version__)
if not torch.allclose(observed, expected):
    print("REPRODUCED: grad(vmap) counts the unbatched output's gradient once per sample")
    raise SystemExit(1)
