"""torch.func.grad over vmap of a custom autograd.Function (generate_vmap_rule=True) that modifies
in place, and marks dirty, an input that is a view without a batch dim raises "RuntimeError: If
your Function modifies inplace an input that is a view of another Tensor, your Function cannot
return more than one Tensor", though the Function returns one Tensor. Eager, grad, vmap and
vmap(grad) of the same Function run it.

vmap passes an input without a batch dim to the vmapped Function (vmapify_autograd_function,
torch/_functorch/autograd_function.py) as it is, so mark_dirty marks the view itself (a batched
input is re-wrapped, the case of func_vmap_mark_dirty.py); the vmapped Function's forward returns
`(*outputs, out_dims)`, two outputs, and under grad autograd applies its check for a dirty view
(torch/csrc/autograd/custom_function.cpp) to that count.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import grad, vmap


class ScaleFirstInPlace(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a, x):
        return a.mul_(2.0)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])

    @staticmethod
    def backward(ctx, g):
        return 2.0 * g, None


def f(x, c):
    a = c.clone().view_as(c)  # a view; with no batch dim under vmap (c is not batched)
    return ScaleFirstInPlace.apply(a, x).sum() + (x * x).sum()


def main() -> int:
    xs, c = torch.randn(2, 3), torch.ones(3)
    expected = torch.full((3,), 2.0)
    assert torch.equal(grad(f, argnums=1)(xs[0], c), expected)
    assert torch.equal(vmap(grad(f, argnums=1), in_dims=(0, None))(xs, c), expected.expand(2, 3))
    vmap(f, in_dims=(0, None))(xs, c)
    try:
        got = grad(lambda c: vmap(f, in_dims=(0, None))(xs, c).sum())(c)
    except RuntimeError as e:
        if "cannot return more than one Tensor" in str(e):
            print(f"REPRODUCED: grad(vmap) raised RuntimeError: {str(e)[:200]}")
            return 1
        raise
    assert torch.equal(got, 2 * expected), got
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
