"""Known torch issue fwad-view-drops-later-tangents (found by the harness; torch only).

Forward AD through a custom Function that returns a view of an input (or the input
as-is) when that input has no tangent: every output *after* it silently loses its
tangent, although the user jvp returned one. Wrong result, no error.

Cause (torch/csrc/autograd/custom_function.cpp, _process_forward_mode_AD): in the branch
"We have a view op where the input didn't have a forward grad but the user returned one
for the output", the loop over outputs ends with `return;` where `continue;` is meant.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
import torch.autograd.forward_ad as fwAD


class ViewThenSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_forward(x)
        return a.view_as(a), x * x  # a view of `a` first, then an output that depends on x

    @staticmethod
    def jvp(ctx, ta, tx):
        (x,) = ctx.saved_tensors
        return ta.view_as(ta), 2 * x * tx

    @staticmethod
    def backward(ctx, ga, gx):
        raise NotImplementedError  # forward AD only


if __name__ == "__main__":
    with fwAD.dual_level():
        a = torch.ones(3)  # no tangent
        x = fwAD.make_dual(torch.full((3,), 2.0), torch.ones(3))
        _, y = ViewThenSquare.apply(a, x)
        tangent = fwAD.unpack_dual(y).tangent
    if tangent is None:
        print("REPRODUCED: the tangent of y is None; expected 2 * x * 1 = [4., 4., 4.]")
        raise SystemExit(1)
    print(f"not reproduced (fixed in torch {torch.__version__}?): tangent of y = {tangent}")
