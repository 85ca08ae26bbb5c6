"""torch.compile(fullgraph=True): ctx.needs_input_grad is missing in a custom Function applied with no arguments (AttributeError).
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class NoInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx):
        ctx.flags = tuple(ctx.needs_input_grad)  # () in eager
        return torch.zeros(3)
    @staticmethod
    def backward(ctx, g):
        return ()

def run(f):
    try:
        return f"returned {f().tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

expected = run(NoInputs.apply)
observed = run(torch.compile(lambda: NoInputs.apply(), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if "object has no attribute" in observed and "needs_input_grad" in observed else 0)
