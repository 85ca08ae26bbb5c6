"""Known torch issue func-dynamo-grad-grad-traced-function-second-order-lost (found by the harness; torch only).

torch.compile of torch.func.grad(grad(f)), where f applies a custom Function to a tensor computed
from the input (here a clone): Dynamo traces the Function into an autograd_function_apply op, and
the outer grad does not differentiate the op's backward, so the second derivative through it is
lost (0 for tanh, where eager gives 0.38). Applied to the input itself (Dynamo inlines the forward)
or as grad(grad(torch.compile(f))), it is right.

Exit status 1 and "REPRODUCED" while the second derivative is lost (backend from argv[1], default
aot_eager; `eager` shows it too).
"""
import sys

import torch
from torch.func import grad


class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(a):
        return torch.tanh(a) * -0.5

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * -0.5 * (1 - torch.tanh(a) ** 2)


def f(x):
    return Tanh.apply(x.clone()).sum()


x = torch.tensor(0.7, dtype=torch.float64)
backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
expected = grad(grad(f))(x).item()
observed = torch.compile(grad(grad(f)), backend=backend)(x).item()
print(f"second derivative: expected (eager) {expected}, observed (compiled, {backend}) {observed}", torch.__version__)
if abs(observed - expected) > 1e-9:
    print("REPRODUCED: torch.compile(grad(grad(f))) loses the second derivative through the traced Function")
    sys.exit(1)
