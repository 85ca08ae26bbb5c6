"""Known torch issue dynamo-hook-on-output-used-inside (found by the harness; torch only).

pytorch/pytorch#91468 (open, "module: correctness (silent)"); the mechanism is explained in
#132929: a torch.compile'd region with an AOT Autograd backend differentiates its outputs
with respect to its inputs as one node. When an output `y` is also used inside the region
(here `z = Double.apply(y)`, returned too), the gradient that reaches `y` through `z` flows
inside the compiled backward and never passes through the tensor `y` the caller holds. So a
hook registered on `y` after the call sees only the gradient from outside the region:
`y.retain_grad()` gives a partial `y.grad`, and a tensor hook that changes the gradient
(`y.register_hook(lambda g: 2 * g)`) changes only that part, so the leaf's gradient differs
from eager's. backend="eager" runs real autograd ops and is not affected.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
Other backends are reported for information (`python this.py aot_eager eager`).
"""
import sys

import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def region(x):
    y = Double.apply(x)
    return y, Double.apply(y)  # y is an output and is used inside


def gradients(fn):
    """(y.grad with retain_grad, x.grad with a doubling hook on y)."""
    x = torch.ones(3, requires_grad=True)
    y, z = fn(x)
    y.retain_grad()
    (y.sum() + z.sum()).backward()
    retained = y.grad
    x = torch.ones(3, requires_grad=True)
    y, z = fn(x)
    y.register_hook(lambda g: 2 * g)
    (y.sum() + z.sum()).backward()
    return retained, x.grad


def reproduces(backend):
    torch._dynamo.reset()
    eager = gradients(region)
    compiled = gradients(torch.compile(region, backend=backend, fullgraph=True))
    print(f"{backend}: y.grad (retain_grad): eager {eager[0].tolist()}, compiled {compiled[0].tolist()}; "
          f"x.grad with a doubling hook on y: eager {eager[1].tolist()}, compiled {compiled[1].tolist()}")
    if not all(torch.equal(e, c) for e, c in zip(eager, compiled)):
        print(f"{backend}: REPRODUCED: hooks on a compiled output see only the gradient from outside the region")
        return True
    print(f"{backend}: not reproduced: the hooks see what they see in eager")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
