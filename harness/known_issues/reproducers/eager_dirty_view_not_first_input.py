"""Torch issue eager-dirty-view-not-first-input (found by the harness, through the axis Arg.view;
registered in harness/known_issues/). Silent wrong gradients, in eager; compiled autograd
gives the same wrong gradients, or raises where the Function returns None for its first input.

A custom Function that modifies in place (and marks dirty) an input that is a *view* makes
torch rebase the view's base history on a CopySlices node wrapping the Function's node
(torch/csrc/autograd/custom_function.cpp, _process_backward_mode_ad; functions/tensor.cpp,
CopySlices). CopySlices takes the Function's gradient number 0 as the gradient of the modified
view. When the view is not the Function's first tensor input, and the first tensor input gets a
gradient, eager silently gives the base the first input's gradient (plus its own) and the first
input gets none. A cousin was reported in 2018 (pytorch/pytorch#5871, closed: there the dirty input is the first and not a view); PR #33069
forbade only the multiple-output case. Under compiled autograd, when the Function's backward
returns None for its first tensor input, the same graph raises "TypeError: add(): argument
'input' (position 1) must be Tensor, not NoneType" (copy_slices_epilogue passes that None on to
the base, where the view's own gradient meets it). Seen on 2.13.0, 2.14.1 and 2.15.0.

Given inputs (autograd.grad, backward(inputs=...)), when the first input does not require grad
and the view's base does, CopySlices::apply instead hits "fn_edge.is_valid() ==
this_edge.is_valid() INTERNAL ASSERT FAILED" (functions/tensor.cpp): its edge 0 (the base's) and
the Function's (the first input's) are expected to be alike.

Under create_graph (autograd.grad(..., create_graph=True) given inputs), the first input, when an
earlier Function saved it, is never freed, gc.collect() included; with the view passed first it is.

Workaround: modify in place the clone itself rather than a view of it, or pass the view that is
modified in place as the Function's first tensor argument.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import gc
import sys
import weakref

import torch


class ScaleSecondInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, other, x):
        ctx.mark_dirty(x)
        return x.mul_(2.0)

    @staticmethod
    def backward(ctx, grad):
        return grad * 5.0, grad * 2.0  # d/d other (as the Function claims), d/d x


def wrong_gradients() -> str | None:
    leaf = torch.ones(3, requires_grad=True)
    other = torch.ones(3, requires_grad=True)
    base = leaf.clone()
    ScaleSecondInPlace.apply(other, base.view_as(base)).sum().backward()
    expected_leaf, expected_other = torch.full((3,), 2.0), torch.full((3,), 5.0)
    if other.grad is None or not torch.equal(leaf.grad, expected_leaf) or not torch.equal(other.grad, expected_other):
        return (f"leaf.grad={leaf.grad.tolist()} (expected 2s), "
                f"other.grad={None if other.grad is None else other.grad.tolist()} (expected 5s)")
    return None


def assert_under_autograd_grad() -> str | None:
    leaf = torch.ones(3, requires_grad=True)
    other = torch.ones(3)  # does not require grad
    base = leaf.clone()
    out = ScaleSecondInPlace.apply(other, base.view_as(base)).sum()
    try:
        (grad,) = torch.autograd.grad(out, [leaf])
    except RuntimeError as e:
        if "INTERNAL ASSERT FAILED" in str(e):
            return "autograd.grad: " + str(e).splitlines()[0][:80]
        raise
    return None if torch.equal(grad, torch.full((3,), 2.0)) else f"autograd.grad gave {grad.tolist()} (expected 2s)"


class SquareSecond(torch.autograd.Function):
    @staticmethod
    def forward(ctx, unused, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return None, grad * 2 * a


def leaked_under_create_graph() -> str | None:
    leaf = torch.randn(3, dtype=torch.float64, requires_grad=True)
    other = torch.randn(3, dtype=torch.float64, requires_grad=True)
    saved = SquareSecond.apply(leaf.clone(), other)  # saves `other` first
    scaled = ScaleSecondInPlace.apply(other, leaf.clone()[:])
    torch.autograd.grad(saved.sum() + scaled.sum(), [leaf], create_graph=True)
    alive = weakref.ref(other)
    del leaf, other, saved, scaled
    gc.collect()
    return "create_graph: the first input was never freed (leak)" if alive() is not None else None


def main() -> int:
    seen = [s for s in (wrong_gradients(), assert_under_autograd_grad(), leaked_under_create_graph()) if s is not None]
    if seen:
        print(f"REPRODUCED on torch {torch.__version__}: " + "; ".join(seen))
        return 1
    print(f"fixed on torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
