"""Compiled autograd + torch.compile fails its own guard ('Duplicate tensors found') on a retained graph of two custom Functions.
Usage: python repro.py [eager|aot_eager|inductor|capture]"""
import sys
import torch
from torch._dynamo import compiled_autograd

mode = (sys.argv[1:] or ["eager"])[0]
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

def gradients(compiled):
    xs = [torch.full((3,), 1.0 + i, requires_grad=True) for i in range(2)]
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):  # as torch's docs advise
        loss = Square.apply(xs[0]).sum() + Square.apply(xs[1]).sum()
    try:
        with compiled_autograd._enable(compiler) if compiled else torch.enable_grad():
            return f"gradients {[g.tolist() for g in torch.autograd.grad(loss, xs, create_graph=True)]}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected, observed = gradients(compiled=False), gradients(compiled=True)
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "Guard failed" in observed or "Duplicate tensors" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
