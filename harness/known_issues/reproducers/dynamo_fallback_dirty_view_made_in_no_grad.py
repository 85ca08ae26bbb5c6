"""torch.compile (backend aot_eager) of code that makes a view of a fresh tensor that does not
require grad (`a.clone().view_as(a)`) and passes it to a custom Function that Dynamo cannot
trace (here a `print` in its forward: a graph break, so the Function runs in eager between
two compiled regions), which modifies it in place and marks it dirty while another input
requires grad, fails with RuntimeError "A view was created in no_grad mode and is being
modified inplace with grad mode enabled".

The region before the graph break has no input that requires grad, so AOT Autograd runs its
graph under no_grad and the view it returns is marked as created in no_grad mode; rebasing
the dirty view's history on the Function's node (torch/csrc/autograd/custom_function.cpp,
`_process_backward_mode_ad`, then `handle_view_on_rebase`) refuses it. Eager makes the view
in grad mode and runs it; so do the `eager` and `inductor` backends (inductor tried on
2.13.0), a view of an input that requires grad, or the clone itself (no view). Related, closed: pytorch/pytorch#103153 (the same error for a
view of a view out of AOT Autograd).

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch


class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(view, weight):
        print(end="")  # Dynamo cannot trace it: a graph break, the Function runs in eager
        return view.mul_(2)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, None


def forward(a, weight):
    view = a.clone().view_as(a)
    return ScaleInPlace.apply(view, weight)


def main() -> int:
    a = torch.rand(3)  # does not require grad
    weight = torch.rand(3, requires_grad=True)
    expected = forward(a, weight)  # eager runs it
    torch._dynamo.reset()
    try:
        got = torch.compile(forward, backend="aot_eager")(a, weight)
    except RuntimeError as e:
        if "A view was created in no_grad mode and is being modified inplace with grad mode enabled" in str(e):
            print(f"REPRODUCED: {type(e).__name__}: A view was created in no_grad mode and is being "
                  f"modified inplace with grad mode enabled (eager: {expected.detach().tolist()})")
            return 1
        raise
    assert torch.equal(got, expected), (got, expected)
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
