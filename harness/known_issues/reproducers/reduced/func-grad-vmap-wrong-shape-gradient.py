"""torch.func.grad(vmap(f)) reports a custom Function's wrong-shaped gradient as 'not expandable', not autograd's 'invalid gradient'."""
import torch
from torch.func import grad, vmap

class WrongShapeGradient(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.sin()
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def backward(ctx, g):
        return torch.ones(g.shape[-1] + 1)  # the wrong shape: invalid

def run(f):
    try:
        return f"gradient {f(torch.ones(2, 3)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(vmap(grad(lambda x: WrongShapeGradient.apply(x).sum())))  # as eager autograd and grad alone
observed = run(grad(lambda xs: vmap(WrongShapeGradient.apply)(xs).sum()))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "not expandable" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
