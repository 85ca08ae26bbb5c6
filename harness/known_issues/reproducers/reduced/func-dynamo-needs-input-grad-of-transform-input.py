"""torch.compile of torch.func.grad gives ctx.needs_input_grad False for the differentiated input: its gradient is dropped.
Usage: python repro.py [aot_eager|eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["aot_eager"])[0]

class Mul(torch.autograd.Function):
    @staticmethod
    def forward(a, b):
        return a * b
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        # None where no gradient is needed, as the autograd docs suggest
        return g * b if ctx.needs_input_grad[0] else None, g * a if ctx.needs_input_grad[1] else None

def loss(x):
    return Mul.apply(x, x * 1.0).sum()  # d/dx of x * x: 2x

def run(f):
    try:
        return f"gradient {f(torch.tensor([1.0, 2.0])).tolist()}"
    except Exception as e:  # what it raises is the observation
        return f"{type(e).__name__}: " + str(e).partition("\n")[0][:200]

grad = torch.func.grad(loss)
expected, observed = run(grad), run(torch.compile(grad, backend=backend, fullgraph=True))
print(f"expected: {expected}\nobserved: {observed}")
assert observed == expected or observed.startswith("gradient"), "another difference"
raise SystemExit("REPRODUCED" if observed != expected else 0)
