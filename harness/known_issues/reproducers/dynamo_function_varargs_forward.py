"""Known torch issue dynamo-function-varargs-forward (found by the harness; torch only).

torch.compile of a custom autograd.Function whose forward takes its inputs as *args:

  * setup_context style, `def forward(*args)`: Dynamo binds the arguments shifted by one,
    so `args[1]` is the first input: the compiled result is silently wrong;
  * old style, `def forward(ctx, *args)`: `args[1]` raises IndexError ("list index out of
    range", as the graph break "Observed exception") although two inputs were passed;
  * setup_context style again, an input passed in a list: the list's place gets the tensor
    before it, so `args[1][0]` indexes a tensor (IndexError on an empty one).

Eager runs both correctly. (Which arities misbind varies; when the ctx reaches a torch op,
e.g. torch.sin(args[0]), Dynamo itself crashes with InternalTorchDynamoError
"'AutogradFunctionContextVariable' object has no attribute 'proxy'".)

Exit status 1 and "REPRODUCED" when any case is present (backend aot_eager); 0 when fixed.
Other backends are reported for information.
"""
import sys

import torch


class SecondOfArgs(torch.autograd.Function):
    @staticmethod
    def forward(*args):
        return args[1] * 1

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return None, g


class FirstOfListed(torch.autograd.Function):
    @staticmethod
    def forward(*args):
        return args[1][0] * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return None, None


class SecondOfArgsOldStyle(torch.autograd.Function):
    @staticmethod
    def forward(ctx, *args):
        return args[1] * 1

    @staticmethod
    def backward(ctx, g):
        return None, g


def reproduces(backend):
    a, b = torch.tensor(1.0), torch.tensor(2.0)
    found = []
    torch._dynamo.reset()
    got = torch.compile(lambda a, b: SecondOfArgs.apply(a, b), backend=backend, fullgraph=True)(a, b)
    if got.item() != 2.0:
        found.append(f"forward(*args): compiled result {got.item()}, eager 2.0")
    torch._dynamo.reset()
    try:
        torch.compile(lambda a, b: SecondOfArgsOldStyle.apply(a, b), backend=backend, fullgraph=True)(a, b)
    except torch._dynamo.exc.Unsupported as e:
        if "index out of range" not in repr(e.__cause__):
            raise
        found.append(f"forward(ctx, *args): {str(e).splitlines()[0]} from {e.__cause__!r}")
    empty = torch.zeros(0, 2)
    torch._dynamo.reset()
    try:
        torch.compile(lambda a, b: FirstOfListed.apply(a, [b]), backend=backend, fullgraph=True)(empty, empty)
    except IndexError as e:  # eager returns an empty tensor
        found.append(f"forward(*args) given [b]: IndexError {str(e).splitlines()[0]}")
    for line in found:
        print(f"{backend}: REPRODUCED: {line}")
    if not found:
        print(f"{backend}: not reproduced (fixed in torch {torch.__version__}?)")
    return bool(found)


if __name__ == "__main__":
    backends = sys.argv[1:] or ["aot_eager"]
    results = [reproduces(b) for b in backends]
    raise SystemExit(1 if results[0] else 0)
