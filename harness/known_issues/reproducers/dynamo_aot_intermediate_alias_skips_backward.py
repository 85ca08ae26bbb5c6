"""Known torch issue dynamo-aot-intermediate-alias-skips-backward (found by the harness; torch only).

A custom Function returns two views of its argument `a`, where `a` is computed inside the
torch.compile'd region (`y = w * 3`). In eager both outputs get the Function's own node,
so its backward runs (here it scales the gradient by 5 for `a` and sends 7x to `x`).
Under torch.compile with an AOT Autograd backend, two graph outputs that alias one
intermediate are "intermediate base" outputs (torch/_functorch/_aot_autograd/
collect_metadata_analysis.py, OutputType.alias_of_intermediate*): the compiled graph
returns the base `y` and replays the views from it outside the compiled autograd Function,
so the outputs' grad_fn is a plain ViewBackward and the custom backward is skipped: `w`
gets the unscaled gradient (6 instead of 30) and `x` gets none (None instead of 14).
For outputs that alias a graph input AOT keeps the custom backward (custom_function_view);
with one output aliasing the intermediate it hides the alias (unsafe_view) and is right too.
The same happens when the intermediate itself is also returned, or two Functions each
return one view of it. backend="eager" runs real autograd ops and is not affected.
Related upstream threads on the mechanism: pytorch/pytorch#97691, #111081 (the replay "runs
after the compiled graph, outside of the custom autograd.Function").

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
Other backends are reported for information (`python this.py aot_eager eager`).
"""
import sys

import torch


class TwoViews(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x):
        return a.view_as(a), a.view_as(a)

    @staticmethod
    def backward(ctx, g0, g1):
        return (g0 + g1) * 5, (g0 + g1) * 7


def region(x, w):
    y = w * 3  # an intermediate: the Function's outputs are views of it
    return TwoViews.apply(y, x)


def gradients(fn):
    x = torch.ones((), requires_grad=True)
    w = torch.ones((), requires_grad=True)
    v0, v1 = fn(x, w)
    (v0 + v1).backward()
    return x.grad, w.grad, type(v0.grad_fn).__name__


def reproduces(backend):
    torch._dynamo.reset()
    eager = gradients(region)
    compiled = gradients(torch.compile(region, backend=backend, fullgraph=True))
    print(f"{backend}: (x.grad, w.grad, grad_fn): eager {eager}, compiled {compiled}")
    if not (compiled[0] is not None and torch.equal(eager[0], compiled[0]) and torch.equal(eager[1], compiled[1])):
        print(f"{backend}: REPRODUCED: the custom backward is skipped for views of an intermediate")
        return True
    print(f"{backend}: not reproduced: the gradients are eager's")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
