"""Known torch issue dynamo-input-returned-as-is-not-a-view (found by the harness; torch only).

A custom autograd.Function that returns one of its inputs as-is: eager autograd returns it
as a view of that input (custom_function.cpp `_view_as_self_with_no_grad`: "returning an
input as-is is treated as if `self.view_as(self)` were returned"), also when no input
requires grad. Under torch.compile, when no input requires grad, the compiled function
returns the input tensor itself (`out is x`), so identity and aliasing differ from eager.
With an input that requires grad, both return a view.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
Other backends are reported for information (`python this.py eager aot_eager`).
"""
import sys

import torch


class ReturnFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a  # an input returned as-is

    @staticmethod
    def backward(ctx, g):
        return g, None


def reproduces(backend):
    torch._dynamo.reset()
    x, y = torch.ones(3), torch.ones(3)  # no input requires grad
    eager = ReturnFirst.apply(x, y)
    compiled = torch.compile(lambda a, b: ReturnFirst.apply(a, b), backend=backend, fullgraph=True)(x, y)
    assert eager is not x and eager._base is x, "eager returns a view of the input"
    if compiled is x:
        print(f"{backend}: REPRODUCED: the compiled Function returned its input itself; eager returns a view of it")
        return True
    print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
