"""torch.func.grad(grad(f)) does not call a tensor hook in the outer differentiation, as eager's double backward does."""
import torch
from torch.func import grad

W = torch.tensor([0.3, 0.7], dtype=torch.float64)

def loss(x):
    y = x * x
    y.register_hook(lambda g: g * 2)  # doubles the gradient of y
    return (y * y).sum()

x = torch.tensor([1.5, -0.5], dtype=torch.float64, requires_grad=True)
(g,) = torch.autograd.grad(loss(x), [x], create_graph=True)
expected = f"second-order gradient {torch.autograd.grad((g * W).sum(), [x])[0].tolist()}"  # eager
observed = f"second-order gradient {grad(lambda x: (grad(loss)(x) * W).sum())(x.detach()).tolist()}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
