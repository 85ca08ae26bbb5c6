"""torch.compile binds the inputs of a custom Function's forward(*args) (setup_context style) shifted by one: wrong result.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class SecondOfArgs(torch.autograd.Function):
    @staticmethod
    def forward(*args):
        return args[1] * 1
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def backward(ctx, g):
        return None, g

def second(a, b):
    return SecondOfArgs.apply(a, b)

expected = f"returned {second(torch.tensor(1.0), torch.tensor(2.0)).item()}"
observed = f"returned {torch.compile(second, backend=backend, fullgraph=True)(torch.tensor(1.0), torch.tensor(2.0)).item()}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
