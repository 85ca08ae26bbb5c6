"""Known torch issue ca-function-backward-unvalidated (found by the harness; torch only).

Compiled autograd does not validate what a custom Function's backward returns. Eager
raises "function <F>Backward returned an incorrect number of gradients (expected 2,
got 1)" and "... returned a gradient different than None at position 2, but the
corresponding forward input was not a Variable"; under compiled autograd the same
backward runs without error (the extra or missing gradient is silently ignored).
When the missing gradient is for a tensor that needs one, it fails later with an
IndexError instead (issue ca-too-few-gradients-indexerror).

Exit status 1 and "REPRODUCED" when the bug is present (with the captured graph run as
is); 0 when fixed. Other compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class TooFewGradients(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, k):
        return a * k

    @staticmethod
    def backward(ctx, g):
        return (g * 2,)  # one gradient for two inputs


class GradientForInt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, k):
        return a * k

    @staticmethod
    def backward(ctx, g):
        return g * 2, torch.ones(())  # a gradient for the int `k`


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def raises(fn, ctx):
    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    loss = fn.apply(x, 2).sum()
    try:
        with ctx:
            loss.backward()
    except RuntimeError as e:
        return str(e).splitlines()[0]
    return None


def reproduces(mode):
    found = []
    for fn in (TooFewGradients, GradientForInt):
        eager = raises(fn, torch.autograd.set_grad_enabled(True))
        compiled = raises(fn, compiled_autograd._enable(compiler(mode)))
        assert eager is not None, f"eager accepted {fn.__name__}"
        if compiled is None:
            found.append(f"{fn.__name__}: eager raises {eager!r}; compiled autograd raises nothing")
    for line in found:
        print(f"{mode}: REPRODUCED: {line}")
    if not found:
        print(f"{mode}: not reproduced (fixed in torch {torch.__version__}?)")
    return len(found) == 2


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    results = [reproduces(m) for m in modes]
    raise SystemExit(1 if results[0] else 0)
