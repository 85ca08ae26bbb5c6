"""torch.compile of torch.func.grad(f) gives a wrong gradient, silently, where f applies a custom
Function to the differentiated input itself and to a tensor computed from it, and the Function's
backward returns None where ctx.needs_input_grad is False (as the autograd docs suggest): eager
torch.func.grad gives 2x for x * x, the compiled one x. The other tensor may be any output of
another Function given something computed from the input, even a view of a tensor that needs no
grad (a Function's outputs all require grad where any input does): then the compiled gradient
is all zeros (a campaign's form, `through_a_function_output`).

A tensor computed from the input requires grad, so Dynamo traces the Function into the
autograd_function_apply op (torch/_dynamo/variables/misc.py, call_apply) and builds its ctx with
needs_input_grad from each input's requires_grad as Dynamo sees it (AutogradFunctionContextVariable.create:
`x.is_tensor() and x.requires_grad`); inside the transform the input itself reports
requires_grad=False, so needs_input_grad[0] is False and the backward drops that gradient.
Related: pytorch/pytorch#134784 (requires_grad of tensors inside a transform under Dynamo),
#159299 (needs_input_grad False under another higher-order op).

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(a, b):
        return a * b

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b if ctx.needs_input_grad[0] else None, g * a if ctx.needs_input_grad[1] else None


class ViewOfSecond(torch.autograd.Function):
    @staticmethod
    def forward(a, b):
        return b.view_as(b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return None, g


def loss(x, y):
    return Mul.apply(x, x * 1.0).sum()  # d/dx of x * x: 2x


def through_a_function_output(x, y):
    return Mul.apply(x, ViewOfSecond.apply(x.clone(), y)).sum()  # d/dx: y


def main() -> int:
    x, y = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    reproduced = False
    for f, expected in ((loss, 2 * x), (through_a_function_output, y)):
        eager = torch.func.grad(f)(x, y)
        assert torch.equal(eager, expected), eager
        torch._dynamo.reset()
        compiled = torch.compile(torch.func.grad(f), backend="aot_eager", fullgraph=True)(x, y)
        if not torch.equal(compiled, eager):
            print(f"REPRODUCED ({f.__name__}): compiled torch.func.grad {compiled.tolist()}, eager {eager.tolist()}")
            reproduced = True
    if reproduced:
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
