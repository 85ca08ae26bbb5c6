"""Known torch issue fwad-input-as-is-none-tangent (found by the harness; torch only).

Forward AD through a custom Function with ctx.set_materialize_grads(False): when an
output aliases an input that has no tangent (the input returned as-is, or modified in
place and marked dirty) and the user jvp returns None for it, torch fails an INTERNAL
ASSERT in autograd_meta.cpp ("please report a bug to PyTorch") instead of leaving the
output without a tangent, as it does when the output does not alias an input.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
import torch.autograd.forward_ad as fwAD


class ReturnFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)  # undefined tangents arrive as None
        return a  # an input returned as-is

    @staticmethod
    def jvp(ctx, ta, tb):
        return None if ta is None else ta.view_as(ta)

    @staticmethod
    def backward(ctx, g):
        return g, None


class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)
        ctx.mark_dirty(a)
        return a.mul_(2)

    @staticmethod
    def jvp(ctx, ta, tb):
        return None if ta is None else ta.mul_(2)

    @staticmethod
    def backward(ctx, g):
        return g * 2, None


def reproduces(fn) -> bool:
    with fwAD.dual_level():
        b = fwAD.make_dual(torch.zeros(3), torch.ones(3))
        try:
            fn.apply(torch.zeros(3), b)  # `a` has no tangent
        except RuntimeError as e:
            if "INTERNAL ASSERT FAILED" in str(e) and "autograd_meta.cpp" in str(e):
                print(f"{fn.__name__}: REPRODUCED: {str(e).splitlines()[0][:160]}")
                return True
            raise
    print(f"{fn.__name__}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    results = [reproduces(ReturnFirst), reproduces(ScaleInPlace)]
    raise SystemExit(1 if all(results) else 0)
