"""torch.compile of torch.func.grad(grad(f)) loses the second derivative through a custom Function applied to a clone of the input.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch
from torch.func import grad

class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(a):
        return torch.tanh(a)
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * (1 - torch.tanh(a) ** 2)

def f(x):
    return Tanh.apply(x.clone())  # on x itself Dynamo inlines the forward, and the result is right

x = torch.tensor(0.7, dtype=torch.float64)
expected = grad(grad(f))(x).item()
observed = torch.compile(grad(grad(f)), backend=sys.argv[1] if len(sys.argv) > 1 else "aot_eager")(x).item()
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if abs(observed - expected) > 1e-9 else 0)
