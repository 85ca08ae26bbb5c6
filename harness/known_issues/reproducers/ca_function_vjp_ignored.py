"""Known torch issue ca-function-vjp-ignored (found by the harness; torch only).

torch documents `vjp` as an alias of `backward` ("Defining this function is equivalent to
defining the vjp function", torch/autograd/function.py) and eager picks whichever the class
overrides (BackwardCFunction._get_user_fn). Compiled autograd calls `_forward_cls.backward`
directly (torch/_dynamo/external_utils.py, call_backward), so a Function that defines only
`vjp` reaches the base class's backward and raises NotImplementedError "You must implement
either the backward or vjp method" at backward. Seen on 2.13.0, 2.14.1 and 2.15.0.

Workaround: define `backward` (or set `backward = vjp` in the class body).

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def vjp(ctx, grad):  # the documented alias of backward
        return grad * 2


def main() -> int:
    x = torch.ones(3, requires_grad=True)
    Double.apply(x).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0)), x.grad  # eager runs the vjp
    x.grad = None
    try:
        with compiled_autograd._enable(torch.compile(backend="eager")):
            Double.apply(x).sum().backward()
    except NotImplementedError as e:
        print(f"REPRODUCED on torch {torch.__version__}: compiled autograd raised {e}")
        return 1
    print(f"fixed on torch {torch.__version__}: x.grad = {x.grad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
