"""torch.func.grad over torch.func.vmap of a custom autograd.Function with
generate_vmap_rule=True that saves its output for backward (ctx.save_for_backward(a, output))
and an input for forward AD (ctx.save_for_forward(a)) raises "AssertionError: flat_bdims must
not be None" in the vmapped backward (restore_vmap -> wrap_batched, torch/_functorch/vmap.py).
grad and vmap(grad) of the same Function work, and so does grad(vmap) when either save is
dropped. (A saved intermediate instead of the output triggers it too.)

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import grad, vmap


class Sin(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a, b):
        return -2 * torch.sin(a)  # b is read by nothing

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        ctx.save_for_backward(a, output)
        ctx.save_for_forward(a)

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        return g * -2 * torch.cos(a), None

    @staticmethod
    def jvp(ctx, ta, tb):
        (a,) = ctx.saved_tensors
        return -2 * torch.cos(a) * ta


def main() -> int:
    a, b = torch.randn(3), torch.randn(3)
    grad(lambda b: Sin.apply(a, b).sum())(b)
    vmap(grad(lambda a, b: Sin.apply(a, b).sum(), argnums=1))(a, b)
    try:
        grad(lambda b: vmap(Sin.apply)(a, b).sum())(b)
    except AssertionError as e:
        if "flat_bdims must not be None" in str(e):
            print(f"REPRODUCED: AssertionError: {e}")
            return 1
        raise
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
