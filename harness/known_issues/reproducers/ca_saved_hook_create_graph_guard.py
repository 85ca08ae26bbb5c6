"""Known torch issue ca-saved-hook-create-graph-guard (found by the harness, issue 29's audit of
the compiled modes; torch only).

Compiled autograd handing its graph to torch.compile (any backend), with create_graph=True,
when two custom Function nodes saved tensors through torch.autograd.graph.saved_tensors_hooks
whose pack hook detaches them (as torch's docs recommend): Dynamo fails its own guard on the
captured backward graph, "AssertionError: Guard failed on the same frame it was created. This is
a bug - please create an issue. ... Duplicate tensors found: ["hooks[1].saved_tensors[0]",
"hooks[3].saved_tensors[0]"]". Eager runs it. Not seen: with create_graph=False, with one
Function saving two tensors, with built-in ops, or with the captured graph run as is (capture).

Exit status 1 and "REPRODUCED" when the bug is present (with backend eager); 0 when fixed.
Other backends (arguments: eager aot_eager inductor) are reported for information.
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


def gradients(compiler=None):
    torch._dynamo.reset()
    xs = [torch.full((3,), 1.0 + i, requires_grad=True) for i in range(2)]
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        loss = Square.apply(xs[0]).sum() + Square.apply(xs[1]).sum()
    if compiler is None:
        return torch.autograd.grad(loss, xs, create_graph=True)
    with compiled_autograd._enable(compiler):
        return torch.autograd.grad(loss, xs, create_graph=True)


def reproduces(backend):
    try:
        gradients(lambda gm: torch.compile(gm, backend=backend, fullgraph=True))
    except AssertionError as e:
        if "Duplicate tensors found" in str(e):
            print(f"{backend}: REPRODUCED on torch {torch.__version__}: {str(e).splitlines()[0][:160]}")
            return True
        raise
    print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    eager = gradients()
    assert all(torch.equal(g, 2 * x) for g, x in zip(eager, (torch.ones(3), torch.full((3,), 2.0)))), eager
    backends = sys.argv[1:] or ["eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
