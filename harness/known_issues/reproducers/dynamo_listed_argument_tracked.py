"""Known torch issue dynamo-listed-argument-tracked (found by the harness; torch only).

A custom autograd.Function given a tensor inside a list (`F.apply(x, [y])`): eager's
Function.apply sees the list as a non-tensor argument (python_function.cpp, unpack_input checks
each argument with THPVariable_Check), so y makes nothing require grad: where no other input
requires grad, the output does not, and has no grad_fn. Under torch.compile the output requires
grad and has a grad_fn whenever y does, on the eager, aot_eager and inductor backends alike: a
loss over it runs a backward eager never runs (the Function's backward gives y nothing).

Exit status 1 and "REPRODUCED" when the bug is present (backend eager); 0 when fixed.
Other backends are reported for information (`python this.py eager aot_eager inductor`).
"""
import sys

import torch


class ScaleBy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, extra):
        (y,) = extra  # a tensor passed in a list
        return x * 2 + y.sin()

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad, None  # the list gets no gradient


def f(x, y):
    return ScaleBy.apply(x, [y])


def reproduces(backend):
    torch._dynamo.reset()
    x, y = torch.ones(3), torch.ones(3, requires_grad=True)  # only the listed tensor requires grad
    eager = f(x, y)
    compiled = torch.compile(f, backend=backend, fullgraph=True)(x, y)
    assert not eager.requires_grad and eager.grad_fn is None, "eager: the list is not a tensor input"
    torch.testing.assert_close(compiled, eager)  # the values agree
    if compiled.requires_grad or compiled.grad_fn is not None:
        print(f"{backend}: REPRODUCED: the output requires grad ({compiled.requires_grad}), grad_fn "
              f"{type(compiled.grad_fn).__name__}; eager: requires_grad False, grad_fn None")
        return True
    print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
