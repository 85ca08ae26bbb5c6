"""torch.func.grad(vmap(f)) fails for a custom Function (generate_vmap_rule=True) whose backward is @once_differentiable."""
import torch
from torch.autograd.function import once_differentiable
from torch.func import grad, vmap

class ConstantAndCopy(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.zeros(3), x.clone()  # the constant has no batch dim under vmap
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    @once_differentiable
    def backward(ctx, g_constant, g_copy):
        return g_copy

def loss(x):
    c, y = ConstantAndCopy.apply(x)
    return (c * c).sum() + y.sum()  # c's gradient, 2 c, requires grad under torch.func.grad

def run(f):
    try:
        return f"gradient {f(torch.ones(2, 3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected, observed = run(vmap(grad(loss))), run(grad(lambda xs: vmap(loss)(xs).sum()))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "under vmap transform" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
