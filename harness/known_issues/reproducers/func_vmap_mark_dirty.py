"""torch.func.vmap over a custom autograd.Function with generate_vmap_rule=True that modifies an
input in place and marks it dirty raises "RuntimeError: Some elements marked as dirty during the
forward method were not returned as output", although the Function returns that input.

vmapify_autograd_function (torch/_functorch/autograd_function.py) runs the user's setup_context
under restore_vmap, on inputs re-wrapped as new BatchedTensors: ctx.mark_dirty(inputs[0]) marks
the wrapper, which is not the tensor the generated Function returns. Torch means to support
mark_dirty here (NOTE [mark_dirty object identity check], wrap_outputs_maintaining_identity), and
no document excludes it; eager autograd and torch.func.grad run the same Function.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import grad, vmap


class ScaleInPlace(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.mul_(2)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])

    @staticmethod
    def backward(ctx, g):
        return g * 2


def main() -> int:
    x = torch.ones(2, 3)
    assert torch.equal(ScaleInPlace.apply(x[0].clone()), torch.full((3,), 2.0))  # eager
    assert torch.equal(grad(lambda x: ScaleInPlace.apply(x.clone()).sum())(x[0]), torch.full((3,), 2.0))
    try:
        out = vmap(lambda x: ScaleInPlace.apply(x.clone()))(x)
    except RuntimeError as e:
        if "Some elements marked as dirty during the forward method were not returned" in str(e):
            print(f"REPRODUCED: RuntimeError: {e}")
            return 1
        raise
    assert torch.equal(out, torch.full((2, 3), 2.0)), out
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
