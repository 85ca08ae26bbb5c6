"""torch.compile: a custom Function it runs eagerly after a graph break loses ctx.mark_non_differentiable (output requires grad).
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class SinAndDouble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        mask = a.sin()
        ctx.mark_non_differentiable(mask)
        return mask, a * 2
    @staticmethod
    def backward(ctx, g_mask, g_double):
        return g_double * 2
    @staticmethod
    def jvp(ctx, t):  # only its presence matters: Dynamo graph-breaks on a user jvp
        return t * 0, t * 2

def marked(f):
    mask, _ = f(torch.ones(3, requires_grad=True))
    return f"requires_grad={mask.requires_grad}, grad_fn={type(mask.grad_fn).__name__}"

expected = marked(SinAndDouble.apply)
observed = marked(torch.compile(lambda a: SinAndDouble.apply(a), backend=backend))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
