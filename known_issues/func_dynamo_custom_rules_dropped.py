"""torch.compile of a function that calls a torch.func transform (grad, vjp, jacrev, jvp, jacfwd,
vmap) on a custom autograd.Function silently drops the Function's own rules: Dynamo inlines its
forward as plain code and the transform differentiates (or batches) the inlined ops, so the
custom backward, jvp and vmap staticmethods are never called. No error, no graph break, even
with fullgraph=True; eager torch.func calls them. A backward that would raise (an invalid
gradient) therefore raises nothing either.

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


def loss(x):
    return SinWithOwnRules.apply(x).sum()


def tangent(x):
    return jvp(SinWithOwnRules.apply, (x,), (torch.ones_like(x),))[1]


def main() -> int:
    x = torch.randn(3)
    own = torch.full((3,), 100.0)
    assert torch.equal(grad(loss)(x), own) and torch.equal(tangent(x), own)  # eager torch.func
    dropped = []
    for name, f in (("grad", grad(loss)), ("jvp", tangent)):
        got = torch.compile(f, backend="eager", fullgraph=True)(x)
        if not torch.equal(got, own):
            assert torch.allclose(got, x.cos()), got  # the derivative of the inlined forward
            dropped.append(name)
    if dropped:
        print(f"REPRODUCED: under torch.compile, torch.func.{' and torch.func.'.join(dropped)} ignore the "
              f"Function's own rules (gave cos(x), the rules give 100)")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
