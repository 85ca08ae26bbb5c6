"""Known torch issue ca-none-gradient-accumulated (found by the harness; torch only).

Compiled autograd: when a custom Function's backward returns None for an input whose
gradient also arrives along another edge (the same tensor passed twice, or read by a
second node), the captured graph sums the gradients with torch.add(None, g) and fails
with "add(): argument 'input' (position 1) must be Tensor, not NoneType". Eager autograd
skips undefined gradients when it accumulates (InputBuffer::add).

Why: the backward of a custom Function is not run while the graph is captured; for each of
its results that has metadata, AutogradCompilerInstance.proxy_call_backward
(torch/_dynamo/compiled_autograd.py, the "create fake Tensors" loop, torch.empty(...)) binds a
defined fake tensor, so the C++ input buffer sees two defined gradients and records
AutogradCompilerInstance.accumulate (torch.add of both proxies). At run time the backward
returns None for that result and torch.add raises.

Three forms, all checked:
  one_backward     the backward returns None for an input it does not use (the harness's
                   unused_grad="none") that is also passed as its other input
  double_backward  the same sum in the second backward of a double backward: a Function with
                   ctx.set_materialize_grads(False) returns its gradient inputs as they come,
                   and the second backward reaches only one of its outputs (the one a
                   nonlinear derivative reads), so it gets None for the other and returns
                   None for the input behind it; the captured graph passes that None to the
                   backward (call_backward(..., g, None)) and still sums the results

  compiled_region  where compiled autograd captures the backward of a torch.compile'd region
                   (torch._dynamo.config.compiled_autograd's training-step use): the region
                   computes a = 2x and b = 3x, a Function that falls back to eager (a duplicate
                   input is a graph break) returns None for a, and AOT's backward graph, copied
                   into the captured one (proxy_call_aot_backward), multiplies that None:
                   "Expected a proper Tensor but got None ... for argument #0 'self'"

Exit status 1 and "REPRODUCED" when every form is present (with the captured graph run as
is); 0 when both are fixed; 2 when only one is (the entry must then be narrowed). Other
compilers are reported for information.
"""
import sys

import torch
from torch._dynamo import compiled_autograd


class NoGradForFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return None, g  # None: no gradient for `a` (documented as allowed)


class BothAsIs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)  # a missing output gradient arrives as None
        return a.view_as(a), b.view_as(b)

    @staticmethod
    def backward(ctx, g0, g1):
        return g0, g1  # None stays None (documented as allowed)


def one_backward():
    """Eager: x.grad = 1s."""
    x = torch.ones(3, requires_grad=True)
    NoGradForFirst.apply(x, x).sum().backward()  # the same tensor twice
    return x.grad


def double_backward():
    """Eager: first-order gradient cos(1) + 1, second-order gradient -sin(1)."""
    x = torch.ones(3, requires_grad=True)
    a, b = BothAsIs.apply(x, x)  # the same tensor twice
    (gx,) = torch.autograd.grad(a.sin().sum() + b.sum(), x, create_graph=True)
    # sin's derivative reads a: the second backward reaches a, not b
    (ggx,) = torch.autograd.grad(gx.sum(), x)
    return ggx


class NoGradForFirstOfThree(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, c):
        return a + b + c

    @staticmethod
    def backward(ctx, g):
        return None, g, g


def compiled_region():
    """Eager: x.grad = 6s (3 + 3 from b, read twice; nothing from a)."""
    x = torch.ones(3, requires_grad=True)

    @torch.compile(backend="aot_eager")
    def loss(x):
        a, b = x * 2, x * 3
        return NoGradForFirstOfThree.apply(a, b, b).sum()  # b twice: Dynamo falls back to eager here
    loss(x).backward()
    return x.grad


def compiler(mode):
    if mode == "capture":
        return lambda gm: gm.forward
    return lambda gm: torch.compile(gm, backend=mode, fullgraph=True)


def reproduces(mode, case):
    torch._dynamo.reset()
    try:
        with compiled_autograd._enable(compiler(mode)):
            got = case()
    except Exception as e:  # torch.compile modes: Unsupported, raised from the fake tensor call
        said = f"{e} {e.__cause__}"
        if any(text in said for text in ("must be Tensor, not NoneType", "Expected a proper Tensor but got None",
                                         "TypeError when making fake tensor call")):
            print(f"{mode} {case.__name__}: REPRODUCED: {str(e).splitlines()[0]} (eager gives {case()})")
            return True
        raise
    print(f"{mode} {case.__name__}: not reproduced (fixed in torch {torch.__version__}?): got {got}")
    return False


if __name__ == "__main__":
    modes = sys.argv[1:] or ["capture"]
    forms = [[reproduces(m, case) for m in modes][0] for case in (one_backward, double_backward, compiled_region)]
    if all(forms):
        raise SystemExit(1)
    if any(forms):
        print("only some forms reproduce: narrow the entry's trigger to them")
        raise SystemExit(2)
    raise SystemExit(0)
