"""Known torch issue copyslices-skips-gradient-validation (found by the harness; torch only).

A custom Function modifies its input in place and marks it dirty. When that input is a
view, torch rebases the view's history on a CopySlices node that wraps the Function's
node (torch/csrc/autograd/functions/tensor.cpp, CopySlices::apply_impl). CopySlices calls
the Function's backward and copies its first gradient into the base's gradient slice
(`grad_slice.copy_(res[0])`) without the shape check the engine applies to every other
node's gradients (validate_outputs: "Function ...Backward returned an invalid gradient at
index 0 - got [..] but expected shape compatible with [..]").

So a backward that returns a gradient of the wrong shape for the dirty view is either
broadcast into the slice silently (here: got (1,) for a (3,) input, and every element of
the slice gets the same wrong gradient), or, where copy_ cannot broadcast, raises copy_'s
"The size of tensor a (..) must match the size of tensor b (..)" that names no Function.
The same Function on a non-view input raises the documented error.

Exit status 1 and "REPRODUCED" when the view case passes unvalidated; 0 when it raises the
same "invalid gradient" error as the non-view case.
"""
import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g.sum().reshape(1)  # the wrong shape: (1,) instead of the input's


def run(as_view):
    leaf = torch.ones(2, 3, requires_grad=True)
    base = leaf.clone()
    x = base[0] if as_view else base  # base[0] is a view: its history goes on a CopySlices
    try:
        Scale.apply(x)
        base.sum().backward()
    except RuntimeError as e:
        return str(e).splitlines()[0]
    return f"no error, leaf.grad = {leaf.grad.tolist()}"


if __name__ == "__main__":
    plain, view = run(False), run(True)
    print(f"non-view input: {plain}")
    print(f"view input:     {view}")
    if "invalid gradient" in plain and "invalid gradient" not in view:
        print("REPRODUCED: the wrong-shaped gradient of a dirty view input is not validated")
        raise SystemExit(1)
    print("not reproduced")
