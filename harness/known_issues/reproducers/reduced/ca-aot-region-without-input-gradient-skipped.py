"""Compiled autograd over a torch.compile'd region whose backward sends no gradient to its input skips it: retain_grad keeps None.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

class NoGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2
    @staticmethod
    def backward(ctx, g):
        return None  # documented: no gradient for `a`

def retained(compile_forward, ca):
    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    f = lambda x: NoGradient.apply(x.clone())
    out = (torch.compile(f, backend=sys.argv[1] if len(sys.argv) > 1 else "aot_eager") if compile_forward else f)(x)
    out.retain_grad()
    with compiled_autograd._enable(lambda gm: gm.forward) if ca else torch.enable_grad():
        out.sum().backward()
    return out.grad

expected = retained(compile_forward=True, ca=False)  # and without torch.compile, under compiled autograd: the same
observed = retained(compile_forward=True, ca=True)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed is None or not torch.equal(observed, expected) else 0)
