"""torch.compile(backend='eager') never version-checks a custom Function's saved tensors: a gradient from modified values.
Usage: python repro.py [eager|aot_eager|inductor] [ca]"""
import sys
import torch
from torch._dynamo import compiled_autograd

backend = (sys.argv[1:] or ["eager"])[0]
ca = compiled_autograd._enable(torch.compile(backend=backend)) if "ca" in sys.argv else torch.enable_grad()

class TanhTimes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, w):
        ctx.save_for_backward(a, w)
        return torch.tanh(a) * w
    @staticmethod
    def backward(ctx, g):
        a, w = ctx.saved_tensors  # eager checks their versions here
        return g * (1 - torch.tanh(a) ** 2) * w, g * torch.tanh(a)

def backward(f, ctx=torch.enable_grad()):
    a, w = torch.full((2,), 2.0), torch.ones(2, requires_grad=True)
    out = f(a, w)
    a.mul_(2.0)  # the saved input, modified in place before backward
    try:
        with ctx:
            out.sum().backward()
    except RuntimeError as e:
        return "RuntimeError: " + str(e).partition(":")[0]  # the message up to the tensor's versions
    return f"no error, w.grad = {[round(v, 4) for v in w.grad.tolist()]} (tanh(2) = 0.964, tanh(4) = 0.9993)"

expected = backward(TanhTimes.apply)
observed = backward(torch.compile(lambda a, w: TanhTimes.apply(a, w), backend=backend, fullgraph=True), ca)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or observed.startswith("no error"), "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
