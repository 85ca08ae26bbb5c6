"""torch.compile of a custom autograd.Function that returns a non-tensor value before an input it
modified in place and marked with ctx.mark_dirty, and then another tensor, marks that other tensor
dirty instead and fails with fullgraph=True: "InternalTorchDynamoError: RuntimeError: a leaf Variable
that requires grad has been used in an in-place operation" (or "ctx.mark_dirty() received a tensor
that was not an input"). Eager runs it, and
so does torch.compile when the non-tensor output comes after the dirty one.

(With outputs (7, x) alone the shifted index falls past the tensors and nothing is raised.)

Where the shifted mark lands on a fresh tensor (only a UserWarning) or past the tensors, it is
silent: the dirty input is no longer marked, so it is an input returned as-is, which AOT Autograd
regenerates as a plain view of the clone it was made from when another output shares its storage
(the second form below: `x` comes back a view, and the Function's backward is skipped for it, so
the gradient of the leaf is wrong). Found by the 5-minute dynamo campaign (2026-12-03, f9d94b9a's
sibling c51a1508). Both forms seen on 2.13.0, 2.14.1 and 2.15.0.

The twin of the mark_non_differentiable shift (dynamo_mark_non_differentiable_index_shifted.py):
Dynamo records the marked outputs by their index among all the forward's outputs, and the traced
Function that replays them (ApplyTemplate / AutogradFunctionApply.setup_context,
torch/_functorch/autograd_function.py, `selected_outputs`) applies that index to the traced forward
graph's outputs, which are the tensors only: the index is shifted by the non-tensor output before it.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import re
import warnings

import torch

#: what torch raises when the shifted mark lands on another output: here the view of the other
#: input ("a leaf Variable that requires grad has been used in an in-place operation"); a fresh
#: tensor gets a UserWarning, "ctx.mark_dirty() received a tensor that was not an input", which
#: the harness's fuzzing also met as an error
MESSAGE = (r"a leaf Variable that requires grad has been used in an in-place operation"
           r"|mark_dirty\(\) received a tensor that was not an input")


class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        x.mul_(2.0)
        ctx.mark_dirty(x)
        return 7, x, y.view_as(y)  # the constant first

    @staticmethod
    def backward(ctx, g_const, gx, gy):
        return gx * 2.0, gy


def f(leaf):
    _, a, b = ScaleInPlace.apply(leaf.clone(), leaf.clone())
    return a + b


class ScaleInPlaceThenFresh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(-0.5)
        ctx.mark_dirty(x)
        return 7, x, torch.ones_like(x)  # the constant first: the mark is replayed on the fresh tensor

    @staticmethod
    def backward(ctx, g_const, gx, g_fresh):
        return gx * -0.5


def g(leaf):
    _, a, _ = ScaleInPlaceThenFresh.apply(leaf.clone())
    return a, a.view_as(a)  # a second output sharing a's storage


def silent_form() -> str | None:
    """The wrong gradient (and `a` a view) where eager's is right, or None."""
    def gradient(fn):
        leaf = torch.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "ctx.mark_dirty() received a tensor that was not an input"
            a, v = fn(leaf)
        (a.sum() + v.sum()).backward()
        return leaf.grad, a._base is not None

    torch._dynamo.reset()
    eager, compiled = gradient(g), gradient(torch.compile(g, backend="aot_eager", fullgraph=True))
    assert torch.equal(eager[0], torch.tensor([-1.0, -1.0])) and not eager[1], eager
    if not torch.equal(compiled[0], eager[0]):
        return (f"silently, with a fresh tensor after the dirty input: the leaf's gradient is {compiled[0]} "
                f"compiled, {eager[0]} in eager, and the dirty output comes back a view: {compiled[1]}")
    return None


def raised_form() -> str | None:
    """torch.compile's error where eager runs, or None."""
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    eager = f(leaf)
    assert torch.equal(eager.detach(), 3 * leaf.detach())
    try:
        compiled = torch.compile(f, backend="aot_eager", fullgraph=True)(leaf)
    except Exception as e:
        if re.search(MESSAGE, str(e)):
            return f"eager returns {eager.detach()}, torch.compile raises {type(e).__name__}: {str(e).splitlines()[0]}"
        raise
    assert torch.equal(compiled.detach(), eager.detach()), (compiled, eager)
    return None


def main() -> int:
    seen = [form for form in (raised_form(), silent_form()) if form]
    if seen:
        print(f"REPRODUCED: {'; '.join(seen)}")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
