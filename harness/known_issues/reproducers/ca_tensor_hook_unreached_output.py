"""Known torch issue ca-tensor-hook-unreached-output (found by the harness; torch only).

A tensor hook (Tensor.register_hook) on one output of a node with several outputs (here a
custom Function; torch.unbind does the same), where the backward runs that node but no
gradient edge reaches the hooked output: compiled autograd traces the hook with None as its
gradient, and its graph pass reorder_tensor_pre_hook_nodes (torch/_dynamo/compiled_autograd.py)
then calls is_placeholder(None), which raises AttributeError "'NoneType' object has no
attribute 'op'" at the end of the capture. Eager calls the hook with None and runs the backward.

The harness meets it in a double backward: every Function output is in its loss, so the
first backward reaches them all, but the second backward reaches only the outputs that a
backward formula reads (the saved input of a nonlinear derivative). `double_backward()`
below is that form, for information; a None gradient sent along an edge (a backward that
returns None) does not raise.

`compiled_region()` is the same trace where compiled autograd captures the backward of a
torch.compile'd region (torch._dynamo.config.compiled_autograd's training-step use): a tensor
hook on an input that the region's backward returns None for (a custom Function's backward
returns None) is traced with None there; it is checked too.

Exit status 1 and "REPRODUCED" when the bug is present (with the captured graph run as
is); 0 when fixed. Other compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g0, g1):
        return g0 * 2 + g1 * 3  # torch materializes the missing g1 as zeros


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * 2 * a  # differentiable: the second backward reaches `a`'s node


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def one_backward():
    """The hooked output b does not reach the loss; a does, so the node runs. Eager: x.grad = 2s."""
    x = torch.ones(3, requires_grad=True)
    a, b = TwoOutputs.apply(x)
    b.register_hook(lambda g: g)
    a.sum().backward()
    return x.grad


def double_backward():
    """Both outputs reach the loss; only a is read by a nonlinear derivative, so the second
    backward runs TwoOutputs' node without an edge to b. Eager: second-order gradient 8s."""
    x = torch.ones(3, requires_grad=True)
    a, b = TwoOutputs.apply(x)
    b.register_hook(lambda g: g)
    (gx,) = torch.autograd.grad(Square.apply(a).sum() + b.sum(), x, create_graph=True)
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    return ggx


class NoGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return None  # no gradient for `a` (documented as allowed)


def compiled_region():
    """The region sends x0 a gradient and x1 none; the hook is on x1. Eager: x0.grad = 2s, the hook
    called with None."""
    x0, x1 = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    x1.register_hook(lambda g: g)
    loss = torch.compile(lambda a, b: Square.apply(a) + NoGradient.apply(b), backend="aot_eager")(x0, x1)
    loss.sum().backward()
    return x0.grad


def reproduces(mode, case):
    torch._dynamo.reset()
    try:
        with compiled_autograd._enable(compiler(mode)):
            got = case()
    except AttributeError as e:
        if "'NoneType' object has no attribute 'op'" not in str(e):
            raise
        print(f"{mode} {case.__name__}: REPRODUCED: AttributeError {e} from compiled autograd "
              f"(eager gives {case()})")
        return True
    print(f"{mode} {case.__name__}: not reproduced (fixed in torch {torch.__version__}?): got {got}")
    return False


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    results = [reproduces(m, one_backward) for m in modes]
    reproduces(modes[0], double_backward)  # the harness's form, for information
    region = reproduces("capture", compiled_region)
    if results[0] != region:
        print("only one of one_backward and compiled_region reproduces: narrow the entry's trigger")
        raise SystemExit(2)
    raise SystemExit(1 if results[0] else 0)
