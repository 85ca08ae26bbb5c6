"""Known torch issue ca-prehook-unused-first-gradient (found by the harness; torch only).

A node pre-hook (grad_fn.register_prehook) on a custom Function whose first output gets
no gradient (a non-tensor output, a mark_non_differentiable output, or one that does not
reach the loss): compiled autograd crashes in its graph pass
reorder_pre_hook_nodes_to_mimic_eager with a bare StopIteration
(`next(iter(users[0].users.keys()))` on a getitem node that has no users). Eager runs
the hook and the backward.

The second form, `double_backward()`: the second backward of a double backward runs the
node through its second output alone (the saved input of a nonlinear derivative), so no
gradient edge reaches the first output there, though the first backward reached both.
A None gradient that another custom Function's backward sends to the first output does
not trip it (compiled autograd traces that backward as returning a tensor).

Exit status 1 and "REPRODUCED" when the bug is present in either form (with the captured
graph run as is); 0 when fixed. Other compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class ConstThenTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return None, a * 2  # the first output is not a tensor

    @staticmethod
    def backward(ctx, g_none, g):
        return g * 2


class TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g0, g1):
        return g0 * 2 + g1 * 3  # torch materializes a missing gradient as zeros


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * 2 * a  # differentiable: the second backward reaches `a`'s node


def one_backward():
    """The first output is not a tensor. Eager: x.grad = 2s."""
    x = torch.ones(3, requires_grad=True)
    _, y = ConstThenTensor.apply(x)
    y.grad_fn.register_prehook(lambda grad_outputs: None)
    y.sum().backward()
    return x.grad


def double_backward():
    """Both outputs reach the loss; only b is read by a nonlinear derivative, so the second
    backward runs TwoOutputs' node with no edge into a. Eager: second-order gradient 18s."""
    x = torch.ones(3, requires_grad=True)
    a, b = TwoOutputs.apply(x)
    a.grad_fn.register_prehook(lambda grad_outputs: None)
    (gx,) = torch.autograd.grad(a.sum() + Square.apply(b).sum(), x, create_graph=True)
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    return ggx


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def reproduces(mode, case):
    torch._dynamo.reset()
    try:
        with compiled_autograd._enable(compiler(mode)):
            got = case()
    except StopIteration:
        print(f"{mode} {case.__name__}: REPRODUCED: StopIteration from compiled autograd (eager gives {case()})")
        return True
    print(f"{mode} {case.__name__}: not reproduced (fixed in torch {torch.__version__}?): got {got}")
    return False


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    results = [[reproduces(m, case) for case in (one_backward, double_backward)] for m in modes]
    raise SystemExit(1 if any(results[0]) else 0)
