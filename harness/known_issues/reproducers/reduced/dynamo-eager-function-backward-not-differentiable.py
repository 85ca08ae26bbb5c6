"""torch.compile(backend='eager'): create_graph=True gives a custom Function's input a gradient that does not require grad.
Usage: python repro.py [eager|aot_eager|inductor] [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

backend = (sys.argv[1:] or ["eager"])[0]
ca = compiled_autograd._enable(torch.compile(backend=backend)) if "ca" in sys.argv else torch.enable_grad()

class Sin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return 2 * torch.sin(a)
    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * torch.cos(a) * g

def second_order(f, ctx=torch.enable_grad()):
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    try:
        with ctx:
            (g,) = torch.autograd.grad(f(x).sum(), [x], create_graph=True)
            if not g.requires_grad:
                return f"the gradient {g.tolist()} does not require grad: no second order"
            return f"second-order gradient {[round(v, 4) for v in torch.autograd.grad(g.sum(), [x])[0].tolist()]}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = second_order(Sin.apply)
observed = second_order(torch.compile(lambda x: Sin.apply(x), backend=backend, fullgraph=True), ca)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if "does not require grad" in observed else 0)
