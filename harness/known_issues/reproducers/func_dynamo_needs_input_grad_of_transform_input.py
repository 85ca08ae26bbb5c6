"""torch.compile of torch.func.grad(f) gives a wrong gradient, silently, where f applies a custom
Function to the differentiated input itself and to a tensor computed from it, and the Function's
backward returns None where ctx.needs_input_grad is False (as the autograd docs suggest): eager
torch.func.grad gives 2x for x * x, the compiled one x.

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


def loss(x):
    return Mul.apply(x, x * 1.0).sum()  # d/dx of x * x: 2x


def main() -> int:
    x = torch.tensor([1.0, 2.0])
    eager = torch.func.grad(loss)(x)
    assert torch.equal(eager, 2 * x), eager
    compiled = torch.compile(torch.func.grad(loss), backend="aot_eager", fullgraph=True)(x)
    if not torch.equal(compiled, eager):
        print(f"REPRODUCED: compiled torch.func.grad {compiled.tolist()}, eager {eager.tolist()}")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
