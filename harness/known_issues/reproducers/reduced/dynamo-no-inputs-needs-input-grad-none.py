"""torch.compile gives a custom Function applied with no arguments a ctx.needs_input_grad of None (eager: ()).
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]
seen = []

class NoInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx):
        seen.append(ctx.needs_input_grad)
        return torch.zeros(3)
    @staticmethod
    def backward(ctx, g):
        return ()

def needs_input_grad(f):
    seen.clear()
    try:
        f()
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")
    return f"ctx.needs_input_grad = {seen[0]!r}"

expected = needs_input_grad(NoInputs.apply)
observed = needs_input_grad(torch.compile(lambda: NoInputs.apply(), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed == "ctx.needs_input_grad = None" else 0)
