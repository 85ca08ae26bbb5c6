"""Compiled autograd with create_graph=True loses second-order gradients through tensors a detaching pack hook saved.
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a
    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * a * g

def second_order(compiled):
    x = torch.tensor(3.0, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):  # as torch's docs advise
        y = Square.apply(x)
    with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
        (g,) = torch.autograd.grad(y, [x], create_graph=True)
        if not g.requires_grad:
            return f"dy/dx = {g.item()} does not require grad: no second order"
        return f"d2y/dx2 = {torch.autograd.grad(g, [x])[0].item()}"

expected, observed = second_order(compiled=False), second_order(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
