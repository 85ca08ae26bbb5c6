"""Known torch issue ca-retained-saved-tensors-guard (found by the harness in an audit of
the compiled modes; torch only).

Compiled autograd handing its graph to torch.compile (any backend), with the graph retained
(create_graph=True, or retain_graph=True and a second backward), when two custom Function nodes
saved tensors through torch.autograd.graph.saved_tensors_hooks whose pack hook detaches them (as
torch's docs recommend): Dynamo fails its own guard on the captured backward graph, "AssertionError:
Guard failed on the same frame it was created. This is a bug - please create an issue. ...
Duplicate tensors found: ["hooks[1].saved_tensors[0]", "hooks[3].saved_tensors[0]"]" (hooks[i]:
the Functions' ctx). Eager runs it. Not seen: with a graph that is not retained, with one Function
saving two tensors, with built-in ops, or with the captured graph run as is (capture). The
harness's audit also met it without saved-tensor hooks (a retained graph of four Functions
saving inputs, outputs and intermediates); that form is not reduced here.

Exit status 1 and "REPRODUCED" when the bug is present (with backend eager, in either retained form);
0 when fixed. Which of the two forms fails varies from run to run on 2.13.0: CI saw create_graph run
and retain_graph fail, where runs here fail both. Other backends (arguments: eager aot_eager
inductor) are reported for information.
"""
import contextlib
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


def gradients(retained, compiler=None):
    """The gradients of two Squares, the graph retained by create_graph or by retain_graph (then
    a second backward)."""
    torch._dynamo.reset()
    xs = [torch.full((3,), 1.0 + i, requires_grad=True) for i in range(2)]
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        loss = Square.apply(xs[0]).sum() + Square.apply(xs[1]).sum()
    with compiled_autograd._enable(compiler) if compiler else contextlib.nullcontext():
        if retained == "create_graph":
            return torch.autograd.grad(loss, xs, create_graph=True)
        torch.autograd.grad(loss, xs, retain_graph=True)
        return torch.autograd.grad(loss, xs)


def reproduces(backend, retained):
    try:
        gradients(retained, lambda gm: torch.compile(gm, backend=backend, fullgraph=True))
    except AssertionError as e:
        if "Duplicate tensors found" in str(e):
            print(f"{backend}, {retained}: REPRODUCED on torch {torch.__version__}: {str(e).splitlines()[0][:160]}")
            return True
        raise
    print(f"{backend}, {retained}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    for retained in ("create_graph", "retain_graph"):
        eager = gradients(retained)
        assert all(torch.equal(g, 2 * x) for g, x in zip(eager, (torch.ones(3), torch.full((3,), 2.0)))), eager
    backends = sys.argv[1:] or ["eager"]
    results = {(b, retained): reproduces(b, retained) for b in backends for retained in ("create_graph", "retain_graph")}
    raise SystemExit(1 if results[backends[0], "create_graph"] or results[backends[0], "retain_graph"] else 0)
