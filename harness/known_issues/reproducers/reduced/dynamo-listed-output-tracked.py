"""torch.compile tracks a tensor a custom Function returns inside a list; eager's Function.apply leaves it untracked.
Usage: python repro.py [eager|aot_eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["eager"])[0]

class ExtraInList(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.sin(), [2 * x]

    @staticmethod
    def backward(ctx, grad_y, grad_list):
        return grad_y * 1.0

def f(x):
    y, (z,) = ExtraInList.apply(x)
    return z

x = torch.ones(3, requires_grad=True)
eager = f(x)
compiled = torch.compile(f, backend=backend, fullgraph=True)(x)
expected = f"requires_grad={eager.requires_grad} grad_fn={type(eager.grad_fn).__name__}"
observed = f"requires_grad={compiled.requires_grad} grad_fn={type(compiled.grad_fn).__name__}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
