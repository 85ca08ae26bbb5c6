"""torch.compile: ctx.saved_variables is empty in a custom Function's traced backward, so the gradient is silently wrong.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import warnings
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]
warnings.simplefilter("ignore", DeprecationWarning)  # saved_variables is deprecated, still served

class ScaleBySaved(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(w)
        return x * w
    @staticmethod
    def backward(ctx, grad):
        for saved in ctx.saved_variables:  # eager: (w,)
            grad = grad * saved
        return grad, None

def gradient(f):
    x = torch.arange(1.0, 4.0, requires_grad=True)
    (g,) = torch.autograd.grad(f(x, torch.full((3,), 3.0)).sum(), x)
    return g.tolist()

expected = gradient(ScaleBySaved.apply)
observed = gradient(torch.compile(ScaleBySaved.apply, backend=backend))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
