"""Known torch issue ca-unpack-hook-create-graph (found by the harness; torch only).

Double backward under compiled autograd when the forward ran under
torch.autograd.graph.saved_tensors_hooks whose pack hook stores a detached tensor (as
torch's docs recommend to avoid reference cycles). Eager restores the saved tensor's
autograd identity when it unpacks it (SavedVariable::unpack), so create_graph=True
gives first-order gradients that are differentiable. Compiled autograd uses the unpack
hook's result as is: the first-order gradient silently does not require grad, and the
second-order gradient through the saved tensor is lost (None, or wrong when other paths
contribute). Affects built-in ops as well as custom Functions. A non-reentrant
torch.utils.checkpoint region saves through such hooks too (its unpack recomputes the
forward, detached), so the same second-order gradient is lost there.

Exit status 1 and "REPRODUCED" when the bug is present (with the captured graph run as
is); 0 when fixed. Other compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * a * g


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def second_order(ctx, checkpointed=False):
    torch._dynamo.reset()
    x = torch.tensor(3.0, requires_grad=True)
    if checkpointed:
        y = torch.utils.checkpoint.checkpoint(Square.apply, x, use_reentrant=False)
    else:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
            y = Square.apply(x)
    with ctx:
        (g,) = torch.autograd.grad(y, [x], create_graph=True)
        if not g.requires_grad:
            return None
        (gg,) = torch.autograd.grad(g, [x])
    return gg.item()


def reproduces(mode):
    found = False
    for checkpointed in (False, True):
        where = "under checkpoint" if checkpointed else "with a detaching pack hook"
        eager = second_order(torch.autograd.set_grad_enabled(True), checkpointed)
        compiled = second_order(compiled_autograd._enable(compiler(mode)), checkpointed)
        assert eager == 2.0, eager
        if compiled != eager:
            print(f"{mode}: REPRODUCED {where}: d2(x*x)/dx2 = {compiled} under compiled autograd, {eager} in eager")
            found = True
        else:
            print(f"{mode}: not reproduced {where} (fixed in torch {torch.__version__}?)")
    return found


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    results = [reproduces(m) for m in modes]
    raise SystemExit(1 if results[0] else 0)
