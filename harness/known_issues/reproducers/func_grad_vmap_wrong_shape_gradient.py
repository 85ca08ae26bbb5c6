"""torch.func.grad over vmap of a custom autograd.Function (generate_vmap_rule=True) whose backward
returns a gradient of the wrong shape raises "RuntimeError: size {[3]} is not expandable to size
{[4]}." from inside torch.func, instead of autograd's validation error "Function ... returned an
invalid gradient at index 0 - got [4] but expected shape compatible with [3]" that eager autograd,
torch.func.grad and vmap(grad) raise for the same Function.

The vmapped Function's backward (vmapify_autograd_function, torch/_functorch/autograd_function.py)
passes each gradient through reductify, whose sum_to_size to the input's shape fails before
autograd validates the Function's results: the error no longer names the Function or says which
gradient is wrong. An error-message divergence: the values are not affected.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import grad, vmap


class WrongShapeGradient(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return torch.ones(g.shape[-1] + 1)


VALIDATION = "returned an invalid gradient at index 0"


def main() -> int:
    xs = torch.randn(2, 3)
    for name, run in (("grad", lambda: grad(lambda x: WrongShapeGradient.apply(x).sum())(xs[0])),
                      ("vmap(grad)", lambda: vmap(grad(lambda x: WrongShapeGradient.apply(x).sum()))(xs))):
        try:
            run()
            raise AssertionError(f"{name} ran a wrong-shaped gradient without an error")
        except RuntimeError as e:
            assert VALIDATION in str(e), (name, e)
    try:
        grad(lambda xs: vmap(WrongShapeGradient.apply)(xs).sum())(xs)
    except RuntimeError as e:
        if VALIDATION not in str(e) and "is not expandable to size" in str(e):
            print(f"REPRODUCED: grad(vmap) raised RuntimeError: {e}")
            return 1
        if VALIDATION in str(e):
            print(f"not reproduced (fixed in torch {torch.__version__}?)")
            return 0
        raise
    raise AssertionError("grad(vmap) ran a wrong-shaped gradient without an error")


if __name__ == "__main__":
    raise SystemExit(main())
