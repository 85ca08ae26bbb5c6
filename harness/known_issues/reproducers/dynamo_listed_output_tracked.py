"""Known torch issue dynamo-listed-output-tracked (found by the harness; torch only).

A custom autograd.Function whose forward returns a tensor inside a list (`return y, [z]`):
eager's Function.apply wraps only the tensors returned at the top level
(torch/csrc/autograd/python_function.cpp, _wrap_outputs), so the list is a non-tensor output
and the tensor in it is untracked: it does not require grad and has no grad_fn (forward runs
under no_grad). Under torch.compile the tensor in the list requires grad and has a grad_fn,
on the eager, aot_eager and inductor backends alike: a later op on it builds a graph eager
never builds, and a backward through it reaches the Function's inputs.

Exit status 1 and "REPRODUCED" when the bug is present (backend eager); 0 when fixed.
Other backends are reported for information (`python this.py eager aot_eager inductor`).
"""
import sys

import torch


class ExtraInList(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.sin(), [2 * x]  # the second result returned inside a list

    @staticmethod
    def backward(ctx, grad_y, grad_list):
        return grad_y  # the list is not a tensor output: its gradient is always None


def outputs(x):
    y, (z,) = ExtraInList.apply(x)
    return y, z


def reproduces(backend):
    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    _, eager_z = outputs(x)
    _, compiled_z = torch.compile(outputs, backend=backend, fullgraph=True)(x)
    assert not eager_z.requires_grad and eager_z.grad_fn is None, "eager leaves the listed tensor untracked"
    if compiled_z.requires_grad or compiled_z.grad_fn is not None:
        print(f"{backend}: REPRODUCED: the tensor in the list requires grad ({compiled_z.requires_grad}), "
              f"grad_fn {type(compiled_z.grad_fn).__name__}; eager: requires_grad False, grad_fn None")
        return True
    print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
