"""torch.compile fails on a custom Function applied with a defaulted forward parameter left out (eager fills it in).
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(x, scale=2.0, shift=None):
        return x * scale if shift is None else x * scale + shift
    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale, shift = inputs  # eager's inputs hold the defaults too
        ctx.scale = scale
    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None, g

def run(f):
    try:
        return f"returned {f(torch.ones(3, requires_grad=True), torch.ones(3)).tolist()!r}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200]

f = lambda x, y: Scale.apply(x, shift=y)  # `scale` left to its default
expected = run(f)
observed = run(torch.compile(f, backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "missing required argument" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
