"""Known torch issue dynamo-dirty-graph-input-saved (found by check_function; torch only).

A custom autograd.Function that updates its input in place, marks it dirty and saves it for
backward (in-place activations such as inplace_abn's leaky ReLU save their output this way
to save memory). When that input comes into the compiled region from outside (an input of
the compiled function, not a tensor made inside it), torch.compile with AOT Autograd
(`aot_eager`, `inductor`) gives a silently wrong gradient: backward reads a saved value that
is not the updated input. Backend `eager` (no AOT Autograd) and eager mode agree; making the
input inside the compiled region (`x.clone()` there) also gives the right gradient.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
"""
import sys

import torch


class InplaceLeakyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, slope):
        x.mul_(torch.where(x >= 0, 1.0, slope))
        ctx.mark_dirty(x)
        ctx.slope = slope
        ctx.save_for_backward(x)  # the updated input: its sign is the input's sign
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * torch.where(y >= 0, 1.0, ctx.slope), None


def gradient(backend):
    leaf = torch.tensor([0.5, -0.25], requires_grad=True)
    apply = lambda x: InplaceLeakyReLU.apply(x, 0.1)  # noqa: E731
    if backend is not None:
        torch._dynamo.reset()
        apply = torch.compile(apply, backend=backend, fullgraph=True)
    apply(leaf.clone()).sum().backward()  # the clone is made outside the compiled region
    return leaf.grad.tolist()


if __name__ == "__main__":
    eager, compiled = gradient(None), gradient("aot_eager")
    if compiled != eager:
        print(f"aot_eager: REPRODUCED: gradient {compiled}, eager {eager} (slope 0.1 on the negative element)")
        sys.exit(1)
    print(f"aot_eager: not reproduced (fixed in torch {torch.__version__}?): gradient {compiled}")
