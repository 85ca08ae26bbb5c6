"""Known torch issue dynamo-eager-function-backward-not-differentiable (found by the harness, issue
29's dynamo:eager audit; torch only).

torch.compile(backend="eager") of a custom Function (traced into autograd_function_apply): a
backward with create_graph=True gives first-order gradients that do not require grad, so the
second-order gradient through the Function's backward is silently lost (None with
allow_unused=True, else "One of the differentiated Tensors appears to not have been used in the
graph"; wrong where built-in ops contribute too). Eager differentiates the Function's backward;
the same code with built-in ops only is differentiated under the eager backend; the AOT backends
refuse double backward outright ("torch.compile with aot_autograd does not currently support
double backward").

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import sys

import torch


class Sin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return 2 * torch.sin(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * torch.cos(a) * g


def first_order(backend=None):
    torch._dynamo.reset()
    x = torch.tensor([0.5, 1.0, 1.5], requires_grad=True)
    forward = (lambda t: Sin.apply(t)) if backend is None else torch.compile(
        lambda t: Sin.apply(t), backend=backend, fullgraph=True)
    (g,) = torch.autograd.grad(forward(x).sum(), [x], create_graph=True)
    return x, g


def main() -> int:
    x, g = first_order()
    (gg,) = torch.autograd.grad(g.sum(), [x])
    assert torch.allclose(gg, -2 * torch.sin(x)), gg  # eager differentiates the Function's backward
    x, g = first_order("eager")
    if not g.requires_grad:
        print(f"REPRODUCED on torch {torch.__version__}: under torch.compile(backend='eager') the first-order "
              f"gradient {g} does not require grad (create_graph=True), eager's does")
        return 1
    print(f"fixed on torch {torch.__version__}: the first-order gradient requires grad")
    return 0


if __name__ == "__main__":
    sys.exit(main())
