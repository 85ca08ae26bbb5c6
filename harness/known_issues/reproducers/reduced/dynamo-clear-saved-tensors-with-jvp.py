"""torch.compile raises for a custom Function with clear_saved_tensors_on_access=True and a jvp, with no forward AD running.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class Sin(torch.autograd.Function):
    clear_saved_tensors_on_access = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()
    @staticmethod
    def jvp(ctx, t):  # never called: no forward AD runs
        (x,) = ctx.saved_tensors
        return t * x.cos()

def gradient(f):
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    try:
        f(x).sum().backward()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return f"x.grad = {[round(v, 4) for v in x.grad.tolist()]}"

expected, observed = gradient(Sin.apply), gradient(torch.compile(lambda x: Sin.apply(x), backend=backend))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "can only be accessed once" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
