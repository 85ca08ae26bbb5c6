"""torch.compile of a custom autograd.Function that returns a non-tensor value before an input it
modified in place and marked with ctx.mark_dirty, and then another tensor, marks that other tensor
dirty instead and fails with fullgraph=True: "InternalTorchDynamoError: RuntimeError: a leaf Variable
that requires grad has been used in an in-place operation" (or "ctx.mark_dirty() received a tensor
that was not an input"). Eager runs it, and
so does torch.compile when the non-tensor output comes after the dirty one.

(With outputs (7, x) alone the shifted index falls past the tensors and nothing is raised.)

The twin of the mark_non_differentiable shift (dynamo_mark_non_differentiable_index_shifted.py):
Dynamo records the marked outputs by their index among all the forward's outputs, and the traced
Function that replays them (ApplyTemplate / AutogradFunctionApply.setup_context,
torch/_functorch/autograd_function.py, `selected_outputs`) applies that index to the traced forward
graph's outputs, which are the tensors only: the index is shifted by the non-tensor output before it.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import re

import torch

#: what torch raises when the shifted mark lands on another output: here the view of the other
#: input ("a leaf Variable that requires grad has been used in an in-place operation"); a fresh
#: tensor gets a UserWarning, "ctx.mark_dirty() received a tensor that was not an input", which
#: the harness's fuzzing also met as an error
MESSAGE = (r"a leaf Variable that requires grad has been used in an in-place operation"
           r"|mark_dirty\(\) received a tensor that was not an input")


class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        x.mul_(2.0)
        ctx.mark_dirty(x)
        return 7, x, y.view_as(y)  # the constant first

    @staticmethod
    def backward(ctx, g_const, gx, gy):
        return gx * 2.0, gy


def f(leaf):
    _, a, b = ScaleInPlace.apply(leaf.clone(), leaf.clone())
    return a + b


def main() -> int:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    eager = f(leaf)
    assert torch.equal(eager.detach(), 3 * leaf.detach())
    try:
        compiled = torch.compile(f, backend="aot_eager", fullgraph=True)(leaf)
    except Exception as e:  # noqa: BLE001 -- the bug is an exception of Dynamo's
        if re.search(MESSAGE, str(e)):
            print(f"REPRODUCED: eager returns {eager.detach()}, torch.compile raises {type(e).__name__}: "
                  f"{str(e).splitlines()[0]}")
            return 1
        raise
    assert torch.equal(compiled.detach(), eager.detach()), (compiled, eager)
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
