"""Known torch issue dynamo-no-inputs-needs-input-grad-missing (found by the harness; torch only).

The torch 2.14 form of dynamo-no-inputs-needs-input-grad-none (same cause, same trigger).
torch.compile of a custom autograd.Function applied with NO arguments (`F.apply()`): its
forward reads `ctx.needs_input_grad`, which eager sets to the empty tuple `()`. Under
Dynamo it raises "AttributeError: 'FunctionCtx' object has no attribute
'needs_input_grad'" (reported as the graph break "Observed exception") with fullgraph=True.

Why: torch/_dynamo/variables/misc.py, AutogradFunctionContextVariable.create, stores
`needs_input_grad` on the traced ctx only `if args and not kwargs`; an empty argument list
is falsy, so nothing is stored and the read falls through to FunctionCtx, which has no such
attribute. (torch 2.13 kept the value None there instead: the TypeError of the sibling
entry.) One argument of any kind gives the right tuple; with fullgraph=False Dynamo
graph-breaks there and runs the Function eagerly, which succeeds.

Exit status 1 and "REPRODUCED" when the bug is present (fullgraph=True, backend from
argv[1], default aot_eager); 0 when fixed or in the other form.
"""
import sys

import torch


class NoInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx):
        ctx.flags = tuple(ctx.needs_input_grad)  # () in eager
        return torch.zeros(3)

    @staticmethod
    def backward(ctx, g):
        return ()


def reproduces(backend):
    torch._dynamo.reset()
    try:
        torch.compile(lambda: NoInputs.apply(), backend=backend, fullgraph=True)()
    except Exception as e:  # Dynamo wraps the AttributeError in a graph break ("Observed exception")
        if "'FunctionCtx' object has no attribute 'needs_input_grad'" in str(e):
            print(f"{backend}: REPRODUCED: {type(e).__name__}: {str(e).splitlines()[0]} (AttributeError: "
                  "'FunctionCtx' object has no attribute 'needs_input_grad'); eager runs it")
            return True
        if "'NoneType' object is not iterable" in str(e):
            print(f"{backend}: not this form: needs_input_grad is None (torch 2.13: "
                  "dynamo-no-inputs-needs-input-grad-none)")
            return False
        raise
    print(f"{backend}: runs (fixed in torch {torch.__version__}?)")
    return False


if __name__ == "__main__":
    backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
    assert NoInputs.apply().shape == (3,)  # eager is fine
    raise SystemExit(1 if reproduces(backend) else 0)
