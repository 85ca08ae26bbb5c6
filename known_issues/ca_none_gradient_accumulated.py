"""Known torch issue ca-none-gradient-accumulated (found by the harness; torch only).

Compiled autograd: when a custom Function's backward returns None for an input whose
gradient also arrives along another edge (the same tensor passed twice, or read by a
second node), the captured graph sums the gradients with torch.add(None, g) and fails
with "add(): argument 'input' (position 1) must be Tensor, not NoneType". Eager autograd
skips undefined gradients when it accumulates (InputBuffer::add).

Exit status 1 and "REPRODUCED" when the bug is present (with the captured graph run as
is); 0 when fixed. Other compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class NoGradForFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return None, g  # None: no gradient for `a` (documented as allowed)


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def reproduces(mode):
    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    loss = NoGradForFirst.apply(x, x).sum()  # the same tensor twice
    try:
        with compiled_autograd._enable(compiler(mode)):
            loss.backward()
    except TypeError as e:
        if "must be Tensor, not NoneType" in str(e):
            print(f"{mode}: REPRODUCED: {e}")
            return True
        raise
    print(f"{mode}: not reproduced (fixed in torch {torch.__version__}?): x.grad = {x.grad}")
    return False


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    results = [reproduces(m) for m in modes]
    raise SystemExit(1 if results[0] else 0)
