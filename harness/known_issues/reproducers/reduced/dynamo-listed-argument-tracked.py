"""torch.compile makes a custom Function's output require grad through a tensor passed in a list; eager's Function.apply does not.
Usage: python repro.py [eager|aot_eager|inductor]"""
import sys
import torch

backend = (sys.argv[1:] or ["eager"])[0]

class ScaleBy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, extra):
        return x * 2 + extra[0].sin()

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad, None

def f(x, y):
    return ScaleBy.apply(x, [y])

x, y = torch.ones(3), torch.ones(3, requires_grad=True)
eager = f(x, y)
compiled = torch.compile(f, backend=backend, fullgraph=True)(x, y)
expected = f"requires_grad={eager.requires_grad} grad_fn={type(eager.grad_fn).__name__}"
observed = f"requires_grad={compiled.requires_grad} grad_fn={type(compiled.grad_fn).__name__}"
print(f"expected: {expected}\nobserved: {observed}")
raise SystemExit("REPRODUCED" if observed != expected else 0)
