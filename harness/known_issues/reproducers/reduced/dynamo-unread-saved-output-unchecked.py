"""torch.compile skips the version-counter check of a custom Function's saved output that was modified in place.
Usage: python repro.py [aot_eager|eager|inductor] [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

backend = (sys.argv[1:] or ["aot_eager"])[0]
ca = compiled_autograd._enable(torch.compile(backend=backend)) if "ca" in sys.argv else torch.enable_grad()

class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = 2 * x
        ctx.save_for_backward(y)
        return y
    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors  # unpacked (eager checks its version here), its values not read
        return 2 * g

def backward(f, ctx=torch.enable_grad()):
    x = torch.ones(3, requires_grad=True)
    y = f(x)
    y.mul_(3)  # the saved output, modified in place before backward
    try:
        with ctx:
            y.sum().backward()
    except RuntimeError as e:
        return "RuntimeError: " + str(e).partition("\n")[0][:140]
    return f"no error, x.grad = {x.grad.tolist()}"

expected = backward(Double.apply)
observed = backward(torch.compile(lambda x: Double.apply(x), backend=backend, fullgraph=True), ca)
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
