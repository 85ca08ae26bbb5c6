"""Known torch issue aot-unused-gradient-materialized-as-zeros (found by the harness; torch only).

torch.compile with an AOT Autograd backend (aot_eager, inductor): a value computed in a compiled
region (here `x.clone()`) whose only consumer is a custom Function that Dynamo runs eagerly after
a graph break, and whose backward returns None for it, gives the leaf an all-zero gradient where
eager gives None: `torch.autograd.grad(..., allow_unused=True)` returns zeros, `.grad` is zeros.
The region's CompiledFunctionBackward (an autograd.Function that materializes grads) turns the
undefined gradient of its output into zeros and differentiates them. With fullgraph=True (the
Function traced into the same graph) the gradient is None, as in eager.

Upstream: pytorch/pytorch#131794 (open) and pytorch/torchdynamo#1102 (the same with a graph break,
2022); pull requests on it: #186355 ("AOTAutograd's custom autograd.Function let autograd
materialize undefined grad outputs as zeros ... unused inputs received zero gradients where eager
mode leaves them undefined", closed), #177764.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager, or the one named on the
command line); 0 when fixed.
"""
import sys

import torch


class UsesOnlyTheFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        print(end="")  # prints nothing, and breaks Dynamo's graph: the Function runs eagerly
        return a.view_as(a)

    @staticmethod
    def backward(ctx, g):
        return g, None  # no gradient for b


def f(x, y):
    return UsesOnlyTheFirst.apply(y, x.clone())


def gradients(fn):
    x = torch.ones(3, requires_grad=True)
    y = torch.ones(3, requires_grad=True)
    return torch.autograd.grad(fn(x, y).sum(), [x, y], allow_unused=True)


def main() -> int:
    backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
    eager = gradients(f)
    assert eager[0] is None and torch.equal(eager[1], torch.ones(3)), eager
    compiled = gradients(torch.compile(f, backend=backend))
    assert torch.equal(compiled[1], eager[1]), compiled
    if compiled[0] is not None:
        print(f"REPRODUCED: the gradient of x, whose clone gets None from the Function, is {compiled[0]} "
              f"compiled ({backend}), None in eager")
        return 1
    print(f"not reproduced (fixed in torch {torch.__version__}?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
