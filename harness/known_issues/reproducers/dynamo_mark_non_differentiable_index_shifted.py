"""torch.compile of a custom autograd.Function that returns a non-tensor value before the tensors
it marks with ctx.mark_non_differentiable marks the wrong outputs: with outputs (7, a, b) and b
marked, a and b both require grad; with a marked, b is marked instead, so a gets a gradient and b
none, and the gradient of the input is wrong. Silent, with fullgraph=True, on every backend
(eager, aot_eager, inductor).

Dynamo records the marks as indices among all the forward's outputs (AutogradFunctionApplyVariable,
torch/_dynamo/variables/higher_order_ops.py: `non_differentiable_idx` over `fwd_out.items`), and
the traced Function that replays them (ApplyTemplate.setup_context, torch/_functorch/autograd_function.py,
`selected_outputs`) applies them to the traced forward graph's outputs, which are the tensors only:
each index is shifted by the non-tensor outputs before it.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch


class MarksA(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return 7, x * 2, x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])  # a = 2 x
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g_const, ga, gb):
        (x,) = ctx.saved_tensors
        return 2 * ga + 2 * x * gb


def f(x):
    _, a, b = MarksA.apply(x)
    return a, b


def main() -> int:
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a, b = f(x)
    eager = ([a.requires_grad, b.requires_grad], torch.autograd.grad(b.sum(), x)[0])
    assert eager[0] == [False, True] and torch.equal(eager[1], 2 * x.detach()), eager
    a, b = torch.compile(f, backend="aot_eager", fullgraph=True)(x)
    compiled = [a.requires_grad, b.requires_grad]
    if compiled != eager[0]:
        grad = torch.autograd.grad(a.sum() + (b.sum() if b.requires_grad else 0), x)[0]
        print(f"REPRODUCED: outputs (7, a, b) with a marked non-differentiable: requires_grad of (a, b) is "
              f"{compiled} compiled, {eager[0]} in eager; the gradient of x is {grad} compiled, {eager[1]} in eager")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
