"""Known torch issue dynamo-function-closure-object (found by the harness; torch only).

torch.compile of a custom autograd.Function made by a factory, whose forward reads an
ordinary Python object (here a frozen dataclass with a scale factor) from its enclosing
scope. When an input requires grad, Dynamo traces the forward as the autograd.Function
higher-order operator and fails with the graph break "Unexpected type in sourceless
builder" ("SourcelessBuilder.create does not know how to wrap <class 'Config'>"), whose
own hint says "This is likely to be a Dynamo bug". Eager runs it; without an input that
requires grad, Dynamo inlines the same forward without complaint.

Exit status 1 and "REPRODUCED" when the bug is present (backend aot_eager); 0 when fixed.
Other backends are reported for information.
"""
import dataclasses
import sys

import torch


@dataclasses.dataclass(frozen=True)
class Config:
    scale: float = 2.0


def make_function(config):
    def forward(a):
        return a * config.scale  # `config` comes from the enclosing scope

    def setup_context(ctx, inputs, output):
        pass

    def backward(ctx, g):
        return g * config.scale

    return type("Scale", (torch.autograd.Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward)})


def reproduces(backend):
    scale = make_function(Config())
    torch._dynamo.reset()
    f = torch.compile(lambda x: scale.apply(x), backend=backend, fullgraph=True)
    try:
        f(torch.ones(3, requires_grad=True))
    except torch._dynamo.exc.Unsupported as e:
        if "sourceless builder" in str(e):
            print(f"{backend}: REPRODUCED: {str(e).splitlines()[0]}: "
                  f"{[l.strip() for l in str(e).splitlines() if 'Explanation' in l][0]}")
            return True
        raise
    print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
