"""torch.compile accepts a custom Function's gradient for a non-tensor input, which eager autograd rejects.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class ForConstant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, k):
        return a * 2
    @staticmethod
    def backward(ctx, g):
        return g * 2, torch.zeros(3)  # a gradient for the int k: invalid

def backward(f):
    x = torch.ones(3, requires_grad=True)
    try:
        f(x, 2).sum().backward()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return f"no error, x.grad = {x.grad.tolist()}"

expected = backward(ForConstant.apply)
observed = backward(torch.compile(lambda a, k: ForConstant.apply(a, k), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or observed.startswith("no error"), "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
