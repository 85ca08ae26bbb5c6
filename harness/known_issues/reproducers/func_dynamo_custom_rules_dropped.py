"""torch.compile of a function that calls a torch.func transform (grad, vjp, jacrev, jvp, jacfwd,
vmap) on a custom autograd.Function silently drops the Function's own rules: Dynamo inlines its
forward as plain code and the transform differentiates (or batches) the inlined ops, so the
custom backward, jvp and vmap staticmethods are never called, and ctx.mark_non_differentiable
is ignored. No error, no graph break, even with fullgraph=True; eager torch.func honours them. A
backward that would raise (an invalid gradient) therefore raises nothing either, a
non-differentiable output gets a tangent and passes a gradient, a tensor passed in a list (which
eager's apply does not see as an input) and one returned in a list (which it does not wrap) get a
tangent, and an output saved for backward and then modified in place raises no version-counter
error.

Upstream: pytorch/pytorch#193279 (backward, under torch.func.grad) and #192985 (jvp, under
torch.func.jvp), "Dynamo silently drops custom backward/jvp of autograd.Function".

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import grad, jvp


class SinWithOwnRules(torch.autograd.Function):
    """sin, with a backward and a jvp that deliberately are not its derivative (100 * g), so
    that a rule which is not called shows."""

    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 100

    @staticmethod
    def jvp(ctx, t):
        return t * 100


class MarkedNonDifferentiable(torch.autograd.Function):
    """(sin(x) marked non-differentiable, 2 * x)."""

    @staticmethod
    def forward(x):
        return x.sin(), x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[0])

    @staticmethod
    def backward(ctx, g_marked, g):
        return g * 2

    @staticmethod
    def jvp(ctx, t):
        return None, t * 2


class NegatedFromList(torch.autograd.Function):
    """-lst[0]: the tensor comes in a list, so eager's apply sees no input and its jvp no tangent."""

    @staticmethod
    def forward(lst):
        return -lst[0]

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return None

    @staticmethod
    def jvp(ctx):
        return torch.zeros(())


class ReturnedInList(torch.autograd.Function):
    """(2 * x, [-x]): eager's apply does not wrap the list, so its tensor has no tangent."""

    @staticmethod
    def forward(x):
        return x * 2, [-x]

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g, g_list):
        return g * 2

    @staticmethod
    def jvp(ctx, t):
        return t * 2, None


class DoubleSavingOutput(torch.autograd.Function):
    """2 * x, saving its output for backward."""

    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        ctx.saved_tensors  # raises when the saved output was modified in place
        return g * 2


def loss(x):
    return SinWithOwnRules.apply(x).sum()


def loss_after_modifying_the_saved_output(x):
    y = DoubleSavingOutput.apply(x)
    y.mul_(2)
    return y.sum()


def marked_tangent(x):
    return jvp(lambda x: MarkedNonDifferentiable.apply(x)[0], (x,), (torch.ones_like(x),))[1]


def listed_tangent(x):
    return jvp(lambda x: NegatedFromList.apply([x]), (x,), (torch.ones_like(x),))[1]


def returned_in_list_tangent(x):
    return jvp(lambda x: ReturnedInList.apply(x)[1][0], (x,), (torch.ones_like(x),))[1]


def tangent(x):
    return jvp(SinWithOwnRules.apply, (x,), (torch.ones_like(x),))[1]


def main() -> int:
    x = torch.randn(3)
    own = torch.full((3,), 100.0)
    assert torch.equal(grad(loss)(x), own) and torch.equal(tangent(x), own)  # eager torch.func
    dropped = []
    for name, f in (("grad", grad(loss)), ("jvp", tangent)):
        try:
            got = torch.compile(f, backend="eager", fullgraph=True)(x)
        except torch._dynamo.exc.Unsupported as e:  # refused, as documented (2.15.0): nothing dropped
            print(f"{name}: torch.compile refuses it ({str(e).splitlines()[0]})")
            continue
        if not torch.equal(got, own):
            assert torch.allclose(got, x.cos()), got  # the derivative of the inlined forward
            dropped.append(name)
    # tangents eager gives none (zeros): the transform over the inlined forward gives them its derivative
    untracked = (("jvp of a non-differentiable output", marked_tangent, x.cos()),
                 ("jvp of a Function given its tensor in a list", listed_tangent, -torch.ones(3)),
                 ("jvp of a Function's output returned in a list", returned_in_list_tangent, -torch.ones(3)))
    for name, f, inlined in untracked:
        assert not f(x).any(), f(x)  # eager
        try:
            got = torch.compile(f, backend="eager", fullgraph=True)(x)
        except torch._dynamo.exc.Unsupported as e:
            print(f"{name}: torch.compile refuses it ({str(e).splitlines()[0]})")
            continue
        if got.any():
            assert torch.allclose(got, inlined), got
            dropped.append(name)
    try:
        grad(loss_after_modifying_the_saved_output)(x)
        raise AssertionError("eager torch.func raised no version-counter error")
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), e
    try:
        torch.compile(grad(loss_after_modifying_the_saved_output), backend="eager", fullgraph=True)(x)
        dropped.append("grad of a Function whose saved output was modified in place (no version-counter error)")
    except torch._dynamo.exc.Unsupported as e:
        print(f"saved output modified in place: torch.compile refuses it ({str(e).splitlines()[0]})")
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), e
    if dropped:
        print(f"REPRODUCED: under torch.compile, torch.func.{', torch.func.'.join(dropped)} ignore the "
              f"Function's own rules (gave the derivative of the inlined forward)")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
