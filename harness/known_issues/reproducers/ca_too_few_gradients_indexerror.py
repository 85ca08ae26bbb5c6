"""Known torch issue ca-too-few-gradients-indexerror (found by the harness; torch only).

A custom Function's backward returns fewer gradients than the Function has inputs, and
an input that needs a gradient is among the missing ones. Eager raises "function
<F>Backward returned an incorrect number of gradients (expected 2, got 1)"; compiled
autograd indexes past the end of the returned tuple and raises "IndexError: tuple index
out of range" (it does not validate the count: see ca-function-backward-unvalidated).

Exit status 1 and "REPRODUCED" when the bug is present (with the captured graph run as
is); 0 when fixed. Other compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class TooFewGradients(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, g):
        return (g,)  # one gradient for two tensor inputs


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def reproduces(mode):
    torch._dynamo.reset()
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    loss = TooFewGradients.apply(a, b).sum()
    try:
        with compiled_autograd._enable(compiler(mode)):
            loss.backward()
    except IndexError as e:
        print(f"{mode}: REPRODUCED: IndexError: {e} (eager raises 'returned an incorrect number of gradients')")
        return True
    except RuntimeError as e:
        print(f"{mode}: not reproduced: RuntimeError: {str(e).splitlines()[0]}")
        return False
    print(f"{mode}: not reproduced, and no error at all")
    return False


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    results = [reproduces(m) for m in modes]
    raise SystemExit(1 if results[0] else 0)
