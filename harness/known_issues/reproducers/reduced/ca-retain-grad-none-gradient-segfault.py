"""Compiled autograd segfaults on retain_grad() of a view whose only gradient is the None of a custom Function.
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class NoGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2
    @staticmethod
    def backward(ctx, g):
        return None  # no gradient for `a` (documented as allowed)

def grads(compiled):
    x = torch.ones(2, 3, requires_grad=True)
    v = x[0]  # a non-leaf: a view of a leaf
    v.retain_grad()
    loss = NoGradient.apply(v).sum()
    with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
        loss.backward()
    return f"x.grad = {x.grad}, v.grad = {v.grad}"

print(f"expected: {grads(compiled=False)}", flush=True)
observed = grads(compiled=True)  # dies of SIGSEGV while the bug is present
print(f"observed: {observed}")
