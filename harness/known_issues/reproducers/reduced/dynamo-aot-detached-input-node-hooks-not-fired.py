"""torch.compile (AOT backends) never fires hooks on the node of an input view that a custom Function sends None.
Usage: python repro.py [aot_eager|eager|inductor] [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

backend = (sys.argv[1:] or ["aot_eager"])[0]
ca = compiled_autograd._enable(torch.compile(backend=backend)) if "ca" in sys.argv else torch.enable_grad()

class FirstOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * 2
    @staticmethod
    def backward(ctx, g):
        return g * 2, None  # no gradient for b (documented as allowed)

def hooks_fired(f, ctx=torch.enable_grad()):
    x = torch.ones(2, 3, requires_grad=True)
    a, b = x[0], x[1]  # views of a leaf
    fired = []
    b.grad_fn.register_prehook(lambda grad_outputs: fired.append("pre"))
    b.grad_fn.register_hook(lambda grad_inputs, grad_outputs: fired.append("post"))
    with ctx:
        f(a, b).sum().backward()
    return f"hooks fired on b.grad_fn: {fired}"

expected = hooks_fired(FirstOnly.apply)
observed = hooks_fired(torch.compile(lambda a, b: FirstOnly.apply(a, b), backend=backend, fullgraph=True), ca)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
