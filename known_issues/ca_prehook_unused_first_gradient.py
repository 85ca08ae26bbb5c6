"""Known torch issue ca-prehook-unused-first-gradient (found by the harness; torch only).

A node pre-hook (grad_fn.register_prehook) on a custom Function whose first output gets
no gradient (a non-tensor output, a mark_non_differentiable output, or one that does not
reach the loss): compiled autograd crashes in its graph pass
reorder_pre_hook_nodes_to_mimic_eager with a bare StopIteration
(`next(iter(users[0].users.keys()))` on a getitem node that has no users). Eager runs
the hook and the backward.

Exit status 1 and "REPRODUCED" when the bug is present (with the captured graph run as
is); 0 when fixed. Other compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class ConstThenTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return None, a * 2  # the first output is not a tensor

    @staticmethod
    def backward(ctx, g_none, g):
        return g * 2


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def reproduces(mode):
    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    _, y = ConstThenTensor.apply(x)
    y.grad_fn.register_prehook(lambda grad_outputs: None)
    try:
        with compiled_autograd._enable(compiler(mode)):
            y.sum().backward()
    except StopIteration:
        print(f"{mode}: REPRODUCED: StopIteration from compiled autograd (eager gives x.grad = [2., 2., 2.])")
        return True
    print(f"{mode}: not reproduced (fixed in torch {torch.__version__}?): x.grad = {x.grad}")
    return False


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    results = [reproduces(m) for m in modes]
    raise SystemExit(1 if results[0] else 0)
