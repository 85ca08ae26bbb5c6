"""Known torch issue dynamo-function-backward-checked-differently (found by the harness; torch only).

Eager autograd validates what a custom Function's backward returns ("function XBackward
returned an incorrect number of gradients", "... a gradient different than None at position
N, but the corresponding forward input was not a Variable", "... an invalid gradient at index
N"), when the backward runs. Under torch.compile (fullgraph, backends eager and aot_eager):

  * a gradient for a non-tensor input is accepted silently;
  * too few gradients, the missing one a tensor input's, raise IndexError ("list index out of
    range") at compile time, in the forward;
  * a gradient of the wrong shape raises under aot_eager at compile time (BackendCompilerFailed,
    in the forward), and names the node "ApplyTemplateBackward" instead of the Function.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
"""
import sys

import torch


class ForConstant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, k):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2, torch.zeros(3)  # a gradient for the int k: eager rejects it


class TooFew(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return (g * 2,)  # one gradient for two tensor inputs: eager rejects it at backward


def run(backend, fn, *args):
    torch._dynamo.reset()
    stage = "forward"
    try:
        y = torch.compile(lambda *a: fn.apply(*a), backend=backend, fullgraph=True)(*args)
        stage = "backward"
        y.sum().backward()
    except Exception as e:  # noqa: BLE001 - which error, and where, is the finding
        return f"{type(e).__name__} at {stage}"
    return "no error"


def reproduces(backend):
    found = []
    got = run(backend, ForConstant, torch.ones(3, requires_grad=True), 2)
    if got == "no error":
        found.append("a gradient for a non-tensor input was accepted (eager: RuntimeError at backward)")
    got = run(backend, TooFew, torch.ones(3, requires_grad=True), torch.ones(3))
    if got == "IndexError at forward":
        found.append("too few gradients: IndexError at forward (eager: RuntimeError at backward)")
    for line in found:
        print(f"{backend}: REPRODUCED: {line}")
    if not found:
        print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return bool(found)


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
