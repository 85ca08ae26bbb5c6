"""torch.compile(fullgraph=True) cannot trace a custom Function (setup_context style) reading an object of its enclosing scope.
Usage: python repro.py [aot_eager|eager|inductor]"""
import dataclasses
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

@dataclasses.dataclass(frozen=True)
class Config:
    scale: float = 2.0

def make_function(config):
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(a):
            return a * config.scale  # `config` comes from the enclosing scope
        @staticmethod
        def setup_context(ctx, inputs, output):
            pass
        @staticmethod
        def backward(ctx, g):
            return g * config.scale
    return Scale

def run(f):
    try:
        return f"returned {f(torch.ones(3, requires_grad=True)).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200] + (f" ({e.__cause__!r})"[:300] if e.__cause__ else "")

Scale = make_function(Config())
expected = run(Scale.apply)
observed = run(torch.compile(lambda x: Scale.apply(x), backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or "sourceless builder" in observed, "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
