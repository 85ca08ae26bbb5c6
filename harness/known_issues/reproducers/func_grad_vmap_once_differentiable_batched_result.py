"""torch.func.grad over vmap of a custom autograd.Function (generate_vmap_rule=True) whose backward
is @once_differentiable raises "RuntimeError: accessing `data` under vmap transform is not
allowed" when one of its outputs has no batch dim (here a constant) and gets a gradient that
requires grad. grad and vmap(grad) of the same Function work, and so does grad(vmap) without
once_differentiable, or when that gradient is a constant.

torch.func.grad runs the backward with create_graph=True, so the gradient of `c` in `c * c`
requires grad. The vmapped backward (vmapify_autograd_function, torch/_functorch/autograd_function.py)
passes the gradient of an output without a batch dim as it is, not as a BatchedTensor (whose
requires_grad reads False), so the once_differentiable wrapper (torch/autograd/function.py) sees
an input that requires grad and runs `var.detach(); var.requires_grad = True` on each result:
the result for x is a BatchedTensor, and setting requires_grad on it raises.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.autograd.function import once_differentiable
from torch.func import grad, vmap


def constant_and_copy(once: bool) -> type[torch.autograd.Function]:
    class ConstantAndCopy(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return torch.zeros(3), x.clone()  # the constant has no batch dim under vmap

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        def backward(ctx, g_constant, g_copy):
            return g_copy

        backward = staticmethod(once_differentiable(backward) if once else backward)
    return ConstantAndCopy


def loss(function: type[torch.autograd.Function]):
    def f(x):
        c, y = function.apply(x)
        return (c * c).sum() + y.sum()  # c's gradient, 2 c, requires grad under torch.func.grad
    return f


def main() -> int:
    xs = torch.randn(2, 3)
    once = constant_and_copy(once=True)
    expected = torch.ones(2, 3)
    assert torch.equal(grad(loss(once))(xs[0]), expected[0])
    assert torch.equal(vmap(grad(loss(once)))(xs), expected)
    assert torch.equal(grad(lambda xs: vmap(loss(constant_and_copy(once=False)))(xs).sum())(xs), expected)
    try:
        got = grad(lambda xs: vmap(loss(once))(xs).sum())(xs)
    except RuntimeError as e:
        if "accessing `data` under vmap transform is not allowed" in str(e):
            print(f"REPRODUCED: grad(vmap) raised RuntimeError: {e}")
            return 1
        raise
    assert torch.equal(got, expected), got
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
