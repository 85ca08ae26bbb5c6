"""Known torch issue dynamo-function-saved-variables-empty (found by the harness; torch only).

torch.compile of a custom autograd.Function whose backward reads `ctx.saved_variables`, the
deprecated alias of `ctx.saved_tensors` that eager still serves (with a DeprecationWarning, as
EfficientNet-PyTorch's SwishImplementation and many older Functions use it). Dynamo traces the
backward with its own ctx, on which `saved_variables` is the empty tuple:
  * a backward that tolerates an empty tuple (a loop over what was saved) returns a wrong
    gradient, silently, with fullgraph=True or not, on every backend;
  * a backward that unpacks it raises ("not enough values to unpack (expected 1, got 0)", as
    the graph break "Observed exception") with fullgraph=True; without, Dynamo falls back to
    eager there and the gradient is right.

Why: torch/_dynamo/variables/misc.py, AutogradFunctionContextVariable.var_getattr, answers
`saved_tensors` from what the traced forward saved; any other name, `saved_variables`
included, falls through to the placeholder ctx Dynamo made, on which nothing was saved.

Exit status 1 and "REPRODUCED" when the bug is present (backend from argv[1], default
aot_eager); 0 when fixed.
"""
import sys
import warnings

import torch

warnings.simplefilter("ignore", DeprecationWarning)  # saved_variables' own warning


class ScaleBySaved(torch.autograd.Function):
    """y = x * w; the backward multiplies the gradient by every tensor the forward saved."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(w)
        return x * w

    @staticmethod
    def backward(ctx, grad):
        for saved in ctx.saved_variables:
            grad = grad * saved
        return grad, None


class Unpacks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_variables
        return grad * 2 * x


def gradient(fn, *args):
    x = args[0]
    (g,) = torch.autograd.grad(fn(*args).sum(), x)
    return g


def reproduces(backend):
    x = torch.arange(1.0, 4.0, requires_grad=True)
    w = torch.full((3,), 3.0)
    found = False
    for fullgraph in (False, True):
        torch._dynamo.reset()
        eager = gradient(ScaleBySaved.apply, x, w)
        compiled = gradient(torch.compile(ScaleBySaved.apply, backend=backend, fullgraph=fullgraph), x, w)
        if not torch.equal(eager, compiled):
            print(f"{backend} fullgraph={fullgraph}: REPRODUCED: loop over ctx.saved_variables: gradient "
                  f"{compiled.tolist()}, eager {eager.tolist()}")
            found = True
    torch._dynamo.reset()
    try:
        gradient(torch.compile(Unpacks.apply, backend=backend, fullgraph=True), x)
    except Exception as e:  # Dynamo wraps the ValueError in a graph break ("Observed exception")
        if "not enough values to unpack (expected 1, got 0)" in str(e):
            print(f"{backend} fullgraph=True: unpacking ctx.saved_variables raises: {type(e).__name__}: "
                  f"{str(e).splitlines()[0]} (ValueError: not enough values to unpack (expected 1, got 0))")
            found = True
        else:
            raise
    if not found:
        print(f"{backend}: right gradients (fixed in torch {torch.__version__}?)")
    return found


if __name__ == "__main__":
    backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
    raise SystemExit(1 if reproduces(backend) else 0)
