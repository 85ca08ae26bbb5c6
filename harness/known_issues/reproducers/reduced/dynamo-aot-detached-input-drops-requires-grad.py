"""torch.compile (AOT backends): a custom Function's output does not require grad when its only grad input is a view it sends None.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class Constant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return torch.full((3,), 0.5)  # does not read `a`
    @staticmethod
    def backward(ctx, g):
        return None  # no gradient for `a` (documented as allowed)

def output(f):
    leaf = torch.ones(2, 3, requires_grad=True)
    out = f(leaf[0])  # a view of a leaf: a non-leaf that requires grad
    return f"requires_grad={out.requires_grad}, grad_fn={type(out.grad_fn).__name__}"

expected = output(Constant.apply)
observed = output(torch.compile(lambda a: Constant.apply(a), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
