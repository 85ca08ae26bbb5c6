"""Known torch issue ca-invalid-gradient-message (found by the harness; torch only).

A custom Function's backward returns a gradient of the wrong shape. Both eager and
compiled autograd raise a RuntimeError (error parity holds), but compiled autograd's
message drops which node returned it:

  eager:    "Function WrongShapeBackward returned an invalid gradient at index 0 - got [4]
             but expected shape compatible with [3]"
  compiled: "[Compiled Autograd Tracing:]invalid gradient at index 0 - got [4] but
             expected shape compatible with [3]"

Exit status 1 and "REPRODUCED" when the difference is present (with the captured graph
run as is); 0 when the messages agree. Other compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class WrongShape(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return torch.zeros(4)  # the input has shape (3,)


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def message(ctx):
    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    loss = WrongShape.apply(x).sum()
    try:
        with ctx:
            loss.backward()
    except RuntimeError as e:
        return str(e).splitlines()[0]
    return "no error"


def reproduces(mode):
    eager = message(torch.autograd.set_grad_enabled(True))
    compiled = message(compiled_autograd._enable(compiler(mode)))
    if "WrongShapeBackward" in eager and "WrongShapeBackward" not in compiled and "invalid gradient" in compiled:
        print(f"{mode}: REPRODUCED: eager: {eager!r}; compiled: {compiled!r}")
        return True
    print(f"{mode}: not reproduced: eager: {eager!r}; compiled: {compiled!r}")
    return False


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    results = [reproduces(m) for m in modes]
    raise SystemExit(1 if results[0] else 0)
