"""torch.compile marks the wrong output non-differentiable when a custom Function returns a non-tensor before it.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class MarksA(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        a, b = x * 2, x * x
        ctx.mark_non_differentiable(a)
        ctx.save_for_backward(x)
        return 7, a, b  # a non-tensor output first
    @staticmethod
    def backward(ctx, g_const, ga, gb):
        (x,) = ctx.saved_tensors
        return 2 * ga + 2 * x * gb

def outputs(f):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    _, a, b = f(x)
    grad = torch.autograd.grad(b.sum(), x)[0].tolist() if b.requires_grad else "none: b does not require grad"
    return f"requires_grad of (a, b) = {(a.requires_grad, b.requires_grad)}, d(b.sum())/dx = {grad}"

expected = outputs(MarksA.apply)
observed = outputs(torch.compile(lambda x: MarksA.apply(x), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
