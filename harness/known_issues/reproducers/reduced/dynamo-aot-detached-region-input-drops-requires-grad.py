"""torch.compile (AOT backends): in a region before a graph break, a custom Function's output loses requires_grad (its input a view it sends None).
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

def f(view, w):
    out = Constant.apply(view)
    print(end="")  # a graph break: the forward is split into two compiled regions
    return out, w * 2

def outputs(f):
    leaf = torch.ones(2, 3, requires_grad=True)
    out, other = f(leaf[0], torch.ones(3, requires_grad=True))  # leaf[0]: a non-leaf that requires grad
    return f"requires_grad of the outputs: {(out.requires_grad, other.requires_grad)}"

expected, observed = outputs(f), outputs(torch.compile(f, backend=backend))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
