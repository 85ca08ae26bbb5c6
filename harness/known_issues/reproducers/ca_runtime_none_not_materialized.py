"""Known torch issue ca-runtime-none-not-materialized (found by the harness; torch only).

Compiled autograd: a custom Function with materialize_grads=True (the default) gets None
for an output's gradient when another custom Function's backward returns None for that
output at run time. Eager autograd gives it zeros of the output's shape (documented:
ctx.set_materialize_grads, "undefined output grad tensors will be expanded to tensors full
of zeros"), so a backward that does arithmetic on the gradient works in eager and raises
"TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'" under compiled autograd.

Why: the backward of a custom Function is not run while the graph is captured; for each of
its results AutogradCompilerInstance.proxy_call_backward (torch/_dynamo/compiled_autograd.py,
the "create fake Tensors" loop) binds a defined fake tensor. The consumer's input is then
defined while the graph is captured, so no zeros are materialized for it; at run time the
producer's backward returns None and the captured graph passes it on as it is
(call_backward(ctx, saved, g0, None)). Compiled autograd materializes zeros only for a
gradient that no edge reaches while it captures. The same binding makes the captured graph
sum such a None with another gradient: ca-none-gradient-accumulated.

Two forms, both checked:
  one_backward     Sender returns None for an input that is Receiver's second output
  double_backward  the form the harness meets: in the second backward of a double backward,
                   AsIs (ctx.set_materialize_grads(False)) returns its gradient inputs as they
                   come; the second backward reaches only its first output (the one sin's
                   derivative reads), so it returns None for its second input, which is
                   Receiver's second output

Exit status 1 and "REPRODUCED" when both forms are present (with the captured graph run as
is); 0 when both are fixed; 2 when only one is (the entry must then be narrowed). Other
compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class Receiver(torch.autograd.Function):  # materialize_grads=True: the default
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g0, g1):
        return g0 * 2 + g1 * 3  # relies on materialized gradients


class Sender(torch.autograd.Function):
    @staticmethod
    def forward(ctx, b, y):
        return y * 2

    @staticmethod
    def backward(ctx, g):
        return None, g * 2  # None: no gradient for `b` (documented as allowed)


class AsIs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)  # a missing output gradient arrives as None
        return a.view_as(a), b.view_as(b)

    @staticmethod
    def backward(ctx, g0, g1):
        return g0, g1  # None stays None (documented as allowed)


def one_backward():
    """Eager: x.grad = 2s (Receiver gets zeros for b), y.grad = 2s."""
    x = torch.ones(3, requires_grad=True)
    y = torch.ones(3, requires_grad=True)
    a, b = Receiver.apply(x)
    (a.sum() + Sender.apply(b, y).sum()).backward()
    return x.grad


def double_backward():
    """Eager: second-order gradient -4 sin(2) (Receiver gets zeros for its second output)."""
    x = torch.ones(3, requires_grad=True)
    a, b = AsIs.apply(*Receiver.apply(x))
    (gx,) = torch.autograd.grad(a.sin().sum() + b.sum(), x, create_graph=True)
    # sin's derivative reads a: the second backward reaches a, not b
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    return ggx


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def reproduces(mode, case):
    torch._dynamo.reset()
    try:
        with compiled_autograd._enable(compiler(mode)):
            got = case()
    except Exception as e:  # torch.compile modes raise it from the fake tensor call
        if "'NoneType' and 'int'" in f"{e} {e.__cause__}" or "TypeError when making fake tensor call" in str(e):
            print(f"{mode} {case.__name__}: REPRODUCED: {type(e).__name__}: {str(e).splitlines()[0]} "
                  f"(eager gives {case()})")
            return True
        raise
    print(f"{mode} {case.__name__}: not reproduced (fixed in torch {torch.__version__}?): got {got}, "
          f"eager gives {case()}")
    return False


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    forms = []
    for case in (one_backward, double_backward):
        seen = [reproduces(m, case) for m in modes]  # every mode is reported; the first decides
        forms.append(seen[0])
    if all(forms):
        raise SystemExit(1)
    if any(forms):
        print("only one form reproduces: narrow the entry's trigger to it")
        raise SystemExit(2)
    raise SystemExit(0)
