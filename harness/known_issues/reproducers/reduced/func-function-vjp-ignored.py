"""torch.func.grad ignores a custom Function's vjp (the documented alias of backward): NotImplementedError."""
import torch
from torch.func import grad

class Double(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def vjp(ctx, g):  # "Defining this function is equivalent to defining the vjp function"
        return g * 2

x = torch.ones(3, requires_grad=True)
Double.apply(x).sum().backward()
expected = f"gradient {x.grad.tolist()}"  # eager autograd runs the vjp
try:
    observed = f"gradient {grad(lambda x: Double.apply(x).sum())(x.detach()).tolist()}"
except NotImplementedError as e:
    observed = f"NotImplementedError: {e}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
