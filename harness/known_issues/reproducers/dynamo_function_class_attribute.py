"""Known torch issue dynamo-function-class-attribute (found by the harness; torch only).

torch.compile (fullgraph) of code that reads a plain class attribute of a custom
autograd.Function subclass, e.g. a flag or a config object the Function keeps on its
class: Dynamo models the attribute as an opaque GetAttrVariable of the
AutogradFunctionVariable, and any use of its value (truthiness, arithmetic, a further
attribute) fails with the graph break "Unsupported python_type() call", whose own hint
says "This is likely to be a Dynamo bug". Eager runs it; the same attribute on an
ordinary class works under Dynamo.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
Other backends are reported for information.
"""
import sys

import torch


class Scale(torch.autograd.Function):
    factor = 2.0  # a plain class attribute

    @staticmethod
    def forward(ctx, a):
        return a * Scale.factor

    @staticmethod
    def backward(ctx, g):
        return g * Scale.factor


def reproduces(backend):
    torch._dynamo.reset()
    f = torch.compile(lambda x: Scale.apply(x), backend=backend, fullgraph=True)
    try:
        f(torch.ones(3, requires_grad=True))
    except torch._dynamo.exc.Unsupported as e:
        if "python_type" in str(e) and "AutogradFunctionVariable" in str(e):
            print(f"{backend}: REPRODUCED: {str(e).splitlines()[0]} "
                  f"({[l.strip() for l in str(e).splitlines() if 'Developer debug' in l][0]})")
            return True
        raise
    print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
