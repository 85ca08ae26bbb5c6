"""torch.compile of torch.func.grad (or vjp, jacrev, vmap(grad)) over a custom
autograd.Function whose forward has a Python side effect (it appends to a module-level list)
fails with Dynamo's internal "AssertionError: Expected FakeTensor, got <class 'torch.Tensor'>"
(torch/_higher_order_ops/utils.py, _collect_fake_inputs, reached from the autograd.Function
higher-order op's speculate_subgraph in torch/_dynamo/variables/higher_order_ops.py), under
fullgraph=True and False alike, when the Function is applied to a tensor computed inside the
transform from its input (here `x * 2`; a view such as `x[0]` does it too). Eager runs it, so
do the same transforms without torch.compile, and so does torch.compile without the side
effect (a `print` instead) or of torch.func.jvp / vmap / grad(vmap). On 2.13 and 2.14 the
transform's input itself passed as is works; from 2.15 that fails the same way.

Exit status 1 and "REPRODUCED" when the bug is present; 0 when fixed.
"""
import torch
from torch.func import grad

calls = []


class Double(torch.autograd.Function):
    @staticmethod
    def forward(a):
        calls.append("forward")  # a Python side effect
        return a * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 2


def loss_gradient(x):
    return grad(lambda x: Double.apply(x * 2).sum())(x)


def main() -> int:
    x = torch.ones(3)
    expected = loss_gradient(x)  # eager torch.func: 4 everywhere
    torch._dynamo.reset()
    try:
        got = torch.compile(loss_gradient, backend="aot_eager")(x)
    except AssertionError as e:
        if "Expected FakeTensor" in str(e):
            print(f"REPRODUCED: AssertionError: {str(e).splitlines()[0]}")
            return 1
        raise
    assert torch.equal(got, expected), (got, expected)
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
