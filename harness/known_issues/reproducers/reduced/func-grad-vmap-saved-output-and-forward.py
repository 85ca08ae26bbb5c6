"""torch.func.grad(vmap(f)) fails for a custom Function (generate_vmap_rule=True) that saves for both backward and forward AD."""
import torch
from torch.func import grad, vmap

class Sin(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a, b):
        return -2 * torch.sin(a) + b
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output)
        ctx.save_for_forward(inputs[0])
    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        return g * -2 * torch.cos(a), g
    @staticmethod
    def jvp(ctx, ta, tb):
        (a,) = ctx.saved_tensors
        return -2 * torch.cos(a) * ta + tb

def run(f):
    try:
        return f"gradient {f(torch.ones(3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

a = torch.zeros(3)
expected = run(grad(lambda b: Sin.apply(a, b).sum()))  # grad alone
observed = run(grad(lambda b: vmap(Sin.apply)(a, b).sum()))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "bdims" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
