"""torch.func.grad over torch.func.vmap of a custom autograd.Function with
generate_vmap_rule=True that saves its output for backward (ctx.save_for_backward(a, output))
and an input for forward AD (ctx.save_for_forward(a)) raises "AssertionError: flat_bdims must
not be None" in the vmapped backward (restore_vmap -> wrap_batched, torch/_functorch/vmap.py).
grad and vmap(grad) of the same Function work, and so does grad(vmap) when either save is
dropped. (A saved intermediate instead of the output triggers it too.)

Cause: the vmapped ctx (CtxCustomSave, torch/_functorch/autograd_function.py) keeps one list of
batch dims, `_pt_saved_tensors_bdims`, which save_for_forward overwrites after save_for_backward
set it, so the backward unpacks its saved tensors with the forward's batch dims. Where the two
lists differ otherwise (an unbatched constant saved for forward, see `SavesAConstant`) the same
bug raises "ValueError: SmallVector unable to grow. Requested capacity (18446744073709551615)";
where the two lists have the same length in another order (`SavesSwapped`), a batched value is
unpacked as unbatched and the reverse: "RuntimeError: The size of tensor a (3) must match the
size of tensor b (4)" (batch size 3, shape (4,)).

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


class SavesAConstant(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, c):
        return torch.sin(x) + c

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, c = inputs
        ctx.save_for_backward(c, x)
        ctx.save_for_forward(x, c)  # c is not batched

    @staticmethod
    def backward(ctx, g):
        _, x = ctx.saved_tensors
        return g * torch.cos(x), None


class SavesSwapped(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, c):
        return torch.tanh(x) + c * c

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, c = inputs
        ctx.save_for_backward(x, c)
        ctx.save_for_forward(c, x)  # the same tensors, c (not batched) first

    @staticmethod
    def backward(ctx, g):
        x, c = ctx.saved_tensors
        return g * (1 - torch.tanh(x) ** 2), 2 * c * g


def main() -> int:
    try:
        grad(lambda xs: vmap(lambda x: SavesSwapped.apply(x, torch.ones(4)))(xs).sum())(torch.ones(3, 4))
    except RuntimeError as e:
        if "must match the size of tensor b" not in str(e):
            raise
        print(f"the third form: RuntimeError: {e}")
    try:
        grad(lambda xs: vmap(lambda x: SavesAConstant.apply(x, torch.zeros(())))(xs).sum())(torch.ones(2, 3))
    except ValueError as e:
        if "SmallVector unable to grow" not in str(e):
            raise
        print(f"the second form: ValueError: {e}")
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
