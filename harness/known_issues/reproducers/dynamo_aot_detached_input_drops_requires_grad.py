"""Known torch issue dynamo-aot-detached-input-drops-requires-grad (found by the harness; torch only).

Eager autograd: every differentiable output of a custom autograd.Function requires grad when
any of its tensor inputs does, whatever the forward computes (here a constant). Under
torch.compile with an AOT Autograd backend (aot_eager, inductor), when the compiled region's
only inputs that require grad are non-leaf tensors (a view of a leaf, or any computed tensor)
and the joint graph computes no gradient for them (the Function's backward returns None),
AOT Autograd detaches those inputs (torch/_functorch/_aot_autograd/graph_compile.py,
`indices_of_inps_to_detach`: "bw_out is None ... and is_non_leaf"), so the compiled function
has no input that requires grad and its outputs come back with requires_grad=False and no
grad_fn. `out.sum().backward()` then raises in compiled code and runs in eager. A leaf input
is never detached (same code), and a backward that returns zeros instead of None gives the
input a gradient, so either avoids it; backend="eager" is not affected.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
Other backends are reported for information (`python this.py aot_eager eager`).
"""
import sys

import torch


class Constant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return torch.full((3,), 0.5)  # does not read `a`

    @staticmethod
    def backward(ctx, g):
        return None  # no gradient for `a`


def reproduces(backend):
    torch._dynamo.reset()
    leaf = torch.ones(2, 3, requires_grad=True)
    view = leaf[0]  # a non-leaf that requires grad
    eager = Constant.apply(view)
    compiled = torch.compile(lambda a: Constant.apply(a), backend=backend, fullgraph=True)(view)
    assert eager.requires_grad and eager.grad_fn is not None, "eager: the output requires grad"
    if not compiled.requires_grad:
        print(f"{backend}: REPRODUCED: the compiled output has requires_grad={compiled.requires_grad}, "
              f"grad_fn={compiled.grad_fn}; eager: requires_grad=True, grad_fn={type(eager.grad_fn).__name__}")
        return True
    print(f"{backend}: not reproduced: the compiled output requires grad, as in eager")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
