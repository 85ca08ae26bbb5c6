"""Compiled autograd's 'invalid gradient' error does not name the custom Function that returned it, as eager's does.
Usage: python repro.py [capture|eager|aot_eager|inductor]"""
import re
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["capture"])[0]
compiler = (lambda gm: gm) if mode == "capture" else torch.compile(backend=mode, fullgraph=True)

class WrongShape(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2
    @staticmethod
    def backward(ctx, g):
        return torch.zeros(4)  # the input has shape (3,): invalid

def backward(compiled):
    x = torch.ones(3, requires_grad=True)
    loss = WrongShape.apply(x).sum()
    try:
        with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
            loss.backward()
    except Exception as e:  # what it raises is the observation (under torch.compile: inside Dynamo's message)
        return f"{type(e).__name__}: " + re.search(r"(Function \w+ returned an |\[[^]]*\])?invalid gradient[^'\n]*", str(e))[0]
    return "no error"

expected, observed = backward(compiled=False), backward(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "invalid gradient" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
