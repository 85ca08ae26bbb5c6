"""Known torch issue dynamo-function-default-arguments-not-filled (found by the harness; torch only).

Eager Function.apply fills a setup_context-style forward's default arguments into what
setup_context receives as `inputs` (torch/autograd/function.py, bind_default_args), so a
Function may be applied with a defaulted parameter left out. Under torch.compile Dynamo does
not fill them in:
  1. a keyword argument after a parameter left to its default: AutogradFunctionVariable
     ._resolve_kwargs (torch/_dynamo/variables/misc.py) raises InternalTorchDynamoError
     "TypeError: forward() missing required argument", with fullgraph=False too (no fallback);
  2. trailing defaults left out (no keyword at all): setup_context's `inputs` is too short, and
     its unpacking raises under fullgraph=True (fullgraph=False falls back to eager and runs);
  3. the same call where no input requires grad (as inside a torch.func transform): Dynamo
     inlines forward and passes the ctx first unless the call has exactly one argument fewer
     than forward has parameters (AutogradFunctionVariable.call_apply), so forward gets the ctx
     as `x`, and the compiled function computes with, or returns, the ctx: no error where the
     code only looks at what it got (below: whether apply returned a tensor);
  4. the same with more parameters: every input is passed one place late (forward's `x` gets the
     argument before it), so the Function computes on the wrong values: below, eager's `x * 2`
     comes back compiled as -6, the constant -3 doubled, with no error at all.

Exit status 1 and "REPRODUCED" while any call fails, or differs, compiled (backend from argv[1],
default aot_eager); 0 when all run as in eager.
"""
import sys

import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(x, scale=2.0, shift=None):
        return x * scale if shift is None else x * scale + shift

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale, shift = inputs
        ctx.scale = scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None, g


def middle(x, y):
    return Scale.apply(x, shift=y)  # `scale` left to its default


def trailing(x, y):
    return Scale.apply(x) * y  # `scale` and `shift` left to their defaults


class Pass(torch.autograd.Function):
    @staticmethod
    def forward(x, unused=None):
        return x

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, unused = inputs

    @staticmethod
    def backward(ctx, g):
        return g, None


def without_grad(x, y):
    return isinstance(Pass.apply(x.detach()), torch.Tensor)  # `unused` left to its default


class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(alpha, beta, x, unused=None):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return None, None, g * 2, None


def shifted(x, y):
    return Scaled.apply(3.0, -3, x.detach())  # `unused` left to its default


backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
x = torch.ones(3, requires_grad=True)
y = torch.ones(3, requires_grad=True)
failed = []
for f in (middle, trailing, without_grad, shifted):
    expected = f(x, y)  # eager runs all three
    torch._dynamo.reset()
    try:
        observed = torch.compile(f, backend=backend, fullgraph=True)(x, y)
        same = (isinstance(observed, torch.Tensor) and torch.equal(observed, expected)
                if isinstance(expected, torch.Tensor) else observed == expected)
        print(f"{f.__name__}: compiled as eager: {same} (eager {expected!r:.40}, compiled {observed!r:.40})")
        if not same:
            failed.append(f.__name__)
    except Exception as e:
        print(f"{f.__name__}: eager ran, compiled raised {type(e).__name__}: {str(e).splitlines()[0]}")
        failed.append(f.__name__)
print(torch.__version__)
if failed:
    print("REPRODUCED")
    sys.exit(1)
