"""torch.func (grad, vjp, jacrev) of a custom autograd.Function that defines `vjp` instead of
`backward` raises "NotImplementedError: You must implement either the backward or vjp method
for your custom autograd.Function to use it with backward mode AD": the single-level Function
torch.func generates (torch/_functorch/autograd_function.py, generate_single_level_function)
calls `backward` only, while eager autograd uses `vjp` when `backward` is not overridden
(the Function docs: defining vjp "is equivalent to defining" backward).

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import grad


class Double(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def vjp(ctx, g):
        return g * 2


def main() -> int:
    x = torch.randn(3, requires_grad=True)
    Double.apply(x).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0))  # eager uses the vjp
    try:
        grad(lambda x: Double.apply(x).sum())(x.detach())
    except NotImplementedError as e:
        if "You must implement either the backward or vjp method" in str(e):
            print(f"REPRODUCED: NotImplementedError: {e}")
            return 1
        raise
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
