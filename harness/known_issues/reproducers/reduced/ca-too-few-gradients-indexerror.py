"""Compiled autograd raises IndexError, not autograd's 'incorrect number of gradients', for a backward returning too few.
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class TooFewGradients(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b
    @staticmethod
    def backward(ctx, g):
        return (g,)  # one gradient for two tensor inputs: invalid

def backward(compiled):
    a, b = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    loss = TooFewGradients.apply(a, b).sum()
    try:
        with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
            loss.backward()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return "no error"

expected, observed = backward(compiled=False), backward(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "index out of range" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
