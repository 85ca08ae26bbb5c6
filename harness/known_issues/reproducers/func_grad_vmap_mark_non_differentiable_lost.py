"""torch.func.grad over vmap of a custom autograd.Function with generate_vmap_rule=True that
marks an output non-differentiable: the mark is lost, the output gets a gradient, and the
Function's backward receives it. grad(vmap(f)) differs from grad(f) per sample; eager autograd,
torch.func.grad and vmap(grad) give the right result.

vmapify_autograd_function (torch/_functorch/autograd_function.py) runs the user's setup_context
under restore_vmap, on outputs re-wrapped as new BatchedTensors: ctx.mark_non_differentiable
marks a wrapper, not the tensor the generated Function returns (the cause of the mark_dirty
error of func_vmap_mark_dirty.py; here nothing raises). The backward below adds 100 x the
gradient of its marked output, which a Function marked non-differentiable never receives
(autograd gives it zeros: materialize_grads).

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import grad, vmap


class MarkedFirst(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * 2, x * 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[0])

    @staticmethod
    def backward(ctx, g_marked, g):
        return g * 3 + g_marked * 100


def loss(x):
    marked, y = MarkedFirst.apply(x)
    return (marked * x).sum() + y.sum()  # d/dx = marked (a constant) + 3 = 5


def main() -> int:
    xs = torch.ones(2, 3)
    expected = torch.full((2, 3), 5.0)
    x = xs[0].clone().requires_grad_()
    loss(x).backward()
    assert torch.equal(x.grad, expected[0]), x.grad  # eager
    assert torch.equal(grad(loss)(xs[0]), expected[0])
    assert torch.equal(vmap(grad(loss))(xs), expected)
    got = grad(lambda xs: vmap(loss)(xs).sum())(xs)
    if not torch.equal(got, expected):
        print(f"REPRODUCED: grad(vmap) gave {got[0].tolist()} per sample, expected {expected[0].tolist()}: "
              "the output marked non-differentiable got a gradient")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
